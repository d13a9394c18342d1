"""``collhub nccl explain SYSTEM``: what NCCL 2.30.7 would pick, per size (mounted through the
``collhub_commands`` hook)."""

from __future__ import annotations

import typer

from hub.cli import FORMAT_OPTION, OutputFormat, emit_json, out, table
from hub.errors import UsageError

__all__ = ["app"]

app = typer.Typer(help="NCCL's own algorithms: what NCCL would pick.", no_args_is_help=True, rich_markup_mode=None)


@app.callback()
def _group() -> None:
    """NCCL 2.30.7's own algorithms: what NCCL would pick for a system (``explain``)."""


def _fmt_size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


@app.command("explain")
def explain_command(
    system: str = typer.Argument(
        ..., help="GEN:GPUSxNODES@nic=BW (hopper:8x4@nic=400G), a preset (dgx-h100x4) or a YAML file"
    ),
    collective: list[str] = typer.Option(
        [], "--collective", "-c", help="allreduce, allgather, reducescatter (repeatable; default all three)"
    ),
    table_: bool = typer.Option(False, "--table", help="also print NCCL's latency/bandwidth table as NCCL logs it"),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """NCCL's choice (algorithm, protocol, channels) and model time per size, 1 KiB to 4 GiB.

    Example: collhub nccl explain dgx-h100x4 --collective allreduce
    """
    from ._explain import EXPLAIN_COLLECTIVES, crossovers, explain, model_table, system_record
    from ._system import parse_system

    s = parse_system(system)
    names = {c.lower(): c for c in EXPLAIN_COLLECTIVES}
    colls: list[str] = []
    for c in collective:
        key = c.replace("-", "").replace("_", "").lower()
        if key not in names:
            raise UsageError(
                f"--collective {c!r}: not one NCCL tunes here", hint="allreduce, allgather or reducescatter"
            )
        colls.append(names[key])
    records = explain(s, tuple(colls) or EXPLAIN_COLLECTIVES)
    if fmt == OutputFormat.json:
        emit_json({**system_record(s), "records": records, "crossovers": [list(x) for x in crossovers(records)]})
        return
    rec = system_record(s)
    out(f"NCCL {rec['nccl']} model of {rec['system']}: {s.ranks} ranks, {rec['channels']} channels")
    for name, g in rec["graphs"].items():
        if g["channels"]:
            out(
                f"  {name} graph: pattern {g['pattern']}, nChannels {g['channels']}, "
                f"bw {g['bw_intra']:g}/{g['bw_inter']:g}, type {g['type_intra']}/{g['type_inter']}"
            )
    if table_:
        for line in model_table(s):
            out(line)
    rows = [
        [
            r["collective"],
            _fmt_size(r["size"]),
            r["algorithm"],
            r["protocol"],
            r["channels"],
            f"{r['time_us']:.3f}",
            "  ".join(f"{k}={v:.1f}" for k, v in r["times"].items()),
        ]
        for r in records
    ]
    out(table(["collective", "size", "algorithm", "protocol", "channels", "time_us", "model times (us)"], rows))
    out("crossovers:")
    for coll, size, key in crossovers(records):
        out(f"  {coll} from {_fmt_size(size)}: {key}")


@app.command("compare")
def compare_command(
    system: str = typer.Argument(..., help="GEN:GPUSxNODES@nic=BW, a preset (dgx-h100x4) or a YAML file"),
    collective: str = typer.Option("allreduce", "--collective", "-c", help="allreduce, allgather or reducescatter"),
    with_: list[str] = typer.Option(
        [], "--with", help="another producer to compare, e.g. hub.ring or tacos.synthesize (repeatable)"
    ),
    sizes: str = typer.Option("1KiB:4GiB", "--sizes", help="FROM:TO, powers of --factor apart"),
    factor: int = typer.Option(4, "--factor", help="size step (nccl-tests' -f)"),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Simulated time of NCCL's pick beside other producers' algorithms, per size.

    Example: collhub nccl compare dgx-h100x4 --with hub.ring --with tacos.synthesize
    """
    from hub import parse_size

    from ._compare import compare
    from ._system import network_of, parse_system

    s = parse_system(system)
    lo, sep, hi = sizes.partition(":")
    if not sep or factor < 2:
        raise UsageError(f"--sizes {sizes!r} / --factor {factor}", hint="e.g. --sizes 1KiB:4GiB --factor 4")
    size_list: list[int] = []
    v = parse_size(lo)
    while v <= parse_size(hi) and len(size_list) < 64:
        size_list.append(v)
        v *= factor
    others: list[tuple[str, dict[str, object]]] = []
    for name in with_:
        params: dict[str, object] = {"ranks": s.ranks}
        if name.startswith("tacos."):
            params = {"network": network_of(s), "progress": False}
        others.append((name, params))
    rows = compare(s, collective, size_list, others)
    if fmt == OutputFormat.json:
        emit_json({"system": s.describe(), "network": network_of(s), "collective": collective, "rows": rows})
        return
    out(f"{collective} on {s.describe()} ({s.ranks} ranks), hub.simulate aware on {network_of(s)}")
    names = [n for n, _ in others]
    head = ["size", "NCCL pick", "model us", "nccl.auto us", *[f"{n} us" for n in names], "bound us", "best"]
    body = [
        [
            _fmt_size(r["size"]),
            r["nccl_pick"] + ("" if r["nccl_schedule"] == r["nccl_pick"] else f" (sim {r['nccl_schedule']})"),
            f"{r['nccl_model_us']:.1f}",
            f"{r['nccl_sim_us']:.1f}",
            *[f"{r[n + '_us']:.1f}" for n in names],
            f"{r['bound_us']:.1f}",
            r["best"] + (" BELOW BOUND: " + ",".join(r["below_bound"]) if r["below_bound"] else ""),
        ]
        for r in rows
    ]
    out(table(head, body))
