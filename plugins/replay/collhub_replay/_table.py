"""nccl-tests-style output of a replay: the table text and the common Result."""

from __future__ import annotations

from typing import Any

__all__ = ["format_table", "metrics_of"]

_TYPE = {
    "float32": "float",
    "float64": "double",
    "float16": "half",
    "bfloat16": "bfloat16",
    "int32": "int32",
    "int64": "int64",
    "int8": "int8",
    "uint8": "uint8",
}
_ROOTED = ("broadcast", "reduce")
_REDUCING = ("allreduce", "reducescatter", "reduce")


def _cols(row: dict[str, Any], key: str) -> str:
    t = row.get(f"{key}_time_us")
    if t is None:
        return f"{'N/A':>9} {'N/A':>7} {'N/A':>7} {'N/A':>6}"
    wrong = row.get(f"{key}_wrong")
    w = "N/A" if wrong is None else str(wrong)
    return f"{t:9.1f} {row[f'{key}_algbw_GBps']:7.3f} {row[f'{key}_busbw_GBps']:7.3f} {w:>6}"


def format_table(title: str, collective: str, rows: list[dict[str, Any]]) -> str:
    """The table: per size a ``replay`` row (out-of-place, in-place) and a ``native`` row."""
    lines = [
        f"# {title}",
        "# time: mean per iteration, max over ranks; algbw = S / time, busbw = algbw x nccl-tests' factor "
        "(decimal GB/s)",
        f"# {'':>12} {'':>12} {'':>8} {'':>6} {'':>5}  {'out-of-place':^33}  {'in-place':^33}",
        f"# {'size':>12} {'count':>12} {'type':>8} {'redop':>6} {'root':>5}  {'time':>9} {'algbw':>7} {'busbw':>7} "
        f"{'#wrong':>6}  {'time':>9} {'algbw':>7} {'busbw':>7} {'#wrong':>6}  impl",
        f"# {'(B)':>12} {'(elements)':>12} {'':>8} {'':>6} {'':>5}  {'(us)':>9} {'(GB/s)':>7} {'(GB/s)':>7} "
        f"{'':>6}  {'(us)':>9} {'(GB/s)':>7} {'(GB/s)':>7} {'':>6}",
    ]
    bus: list[float] = []
    bad = 0
    for row in rows:
        root = row["root"] if collective in _ROOTED else -1
        redop = row["redop"] if collective in _REDUCING else "none"  # nccl-tests prints none for data movement
        head = f"  {row['size']:>12} {row['count']:>12} {_TYPE.get(row['type'], row['type']):>8} {redop:>6} {root:>5}"
        lines.append(f"{head}  {_cols(row, 'oop')}  {_cols(row, 'ip')}  replay")
        if "native_time_us" in row:
            lines.append(f"{head}  {_cols(row, 'native')}  {_cols(row, 'native_ip')}  native")
        for key, label in (("oop", "out-of-place"), ("ip", "in-place")):
            for q, chunk, elem in row.get(f"{key}_first_wrong") or []:
                per = row[f"{key}_wrong_per_rank"]
                lines.append(
                    f"#   {label} WRONG: {per[q]} element(s) on rank {q}, first in output chunk {chunk} "
                    f"(element {elem}); wrong per rank: {per}"
                )
            if f"{key}_busbw_GBps" in row:
                bus.append(row[f"{key}_busbw_GBps"])
            bad += int(row.get(f"{key}_wrong") or 0)
    lines.append(f"# Out of bounds values : {bad} {'OK' if bad == 0 else 'FAILED'}")
    if bus:
        lines.append(f"# Avg bus bandwidth    : {sum(bus) / len(bus):.4f}")
    return "\n".join(lines)


def metrics_of(row: dict[str, Any], primary: str) -> dict[str, Any]:
    """Flat metrics of one size: the ``primary`` mode's figures under the plain names."""
    out: dict[str, Any] = {"size_bytes": row["size"], "count": row["count"]}
    for key in ("oop", "ip"):
        for m in ("time_us", "algbw_GBps", "busbw_GBps", "wrong"):
            if f"{key}_{m}" in row:
                out[f"{key}_{m}"] = row[f"{key}_{m}"]
    for m in ("time_us", "algbw_GBps", "busbw_GBps", "wrong"):
        out[m] = row.get(f"{primary}_{m}")
    out["time_ns"] = out["time_us"] * 1000.0 if out["time_us"] is not None else None
    for m in (
        "native_time_us",
        "native_algbw_GBps",
        "native_busbw_GBps",
        "native_wrong",
        "native_mismatch",
        "native_ip_time_us",
        "native_ip_busbw_GBps",
        "native_ip_wrong",
    ):
        if m in row:
            out[m] = row[m]
    if out.get("busbw_GBps") and out.get("native_busbw_GBps"):
        out["busbw_vs_native"] = out["busbw_GBps"] / out["native_busbw_GBps"]
    return out
