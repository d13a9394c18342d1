"""The ``run.sh`` and ``README.md`` written into every bundle."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._bundle import Bundle

__all__ = ["bundle_readme", "run_sh"]


def run_sh(args: list[str]) -> str:
    """A POSIX shell script that runs the bundle from its own directory.

    The binary comes from ``$1`` or ``COLLHUB_ASTRASIM_BIN``. A relative binary path is made
    absolute *before* changing directory, because ASTRA-sim resolves every configuration path
    (including the custom ET prefixes inside ``system.json``) against the working directory.
    """
    joined = " \\\n  ".join(shlex.quote(a) for a in args)
    return f"""#!/bin/sh
# Run this collhub bundle on an ASTRA-sim analytical binary.
# usage: ./run.sh [path/to/AstraSim_Analytical_Congestion_(Un)aware] [extra ASTRA-sim options]
set -eu
BIN="${{1:-${{COLLHUB_ASTRASIM_BIN:-}}}}"
if [ -z "$BIN" ]; then
  echo "usage: $0 <ASTRA-sim binary> (or set COLLHUB_ASTRASIM_BIN)" >&2
  exit 2
fi
[ "$#" -gt 0 ] && shift
case "$BIN" in
  /*) ;;
  */*) BIN="$(pwd)/$BIN" ;;
esac
cd "$(dirname "$0")"
exec "$BIN" \\
  {joined} "$@"
"""


def _fmt_bytes(size: int | None) -> str:
    if size is None:
        return "as bound in the algorithm ETs"
    return f"{size} B"


def bundle_readme(bundle: Bundle, system: dict[str, Any]) -> str:
    """Human instructions: what is in the bundle, how to run it, what to expect."""
    dims = bundle.dims
    net = " x ".join(f"{d.kind}({d.npus}, {d.bandwidth:g} GB/s, {d.latency:g} ns)" for d in dims)
    lines = [
        "# ASTRA-sim input bundle (written by collhub-astrasim)",
        "",
        f"* NPUs: {bundle.ranks}; network: {net}",
        f"* ASTRA-sim version targeted: `{bundle.target}`; backend: `{bundle.backend}`",
    ]
    if bundle.algorithm is not None:
        alg = bundle.algorithm
        lines.append(
            f"* Algorithm: `{alg.name or '(unnamed)'}` ({alg.collective.value}, {alg.ranks} ranks, "
            f"{alg.message_count()} messages), collective size {_fmt_bytes(bundle.size)}"
        )
    for coll, impl in bundle.implementations.items():
        lines.append(f"* {coll}: {impl}")
    if bundle.repairs:
        lines += ["", "## Changes made to the workload so that ASTRA-sim runs it", ""]
        lines += [f"* {what}: {count}" for what, count in bundle.repairs.items()]
        lines += [
            "",
            "(ASTRA-sim aborts on a dependency on an absent node and on METADATA nodes; a "
            "METADATA node's dependents keep its own dependencies.)",
        ]
    lines += [
        "",
        "## Files",
        "",
        "| Path | Content |",
        "|---|---|",
        "| `algorithm/custom_<collective>.<rank>.et` | per-rank custom-collective ETs: COMM_SEND/COMM_RECV "
        "(`comm_size` int64 bytes, `comm_src`/`comm_dst`/`comm_tag` int32) and COMP (`duration_micros`) nodes |",
        f"| `{bundle.workload_prefix}.<rank>.et` | per-rank workload ETs |",
        "| `system.json` | system layer settings; the custom key names the algorithm ET prefix (relative path) |",
        '| `network.yml` | analytical network: bandwidth in GiB/s (ASTRA-sim\'s "GB/s"), latency in ns per hop |',
        "| `memory.json` | no remote memory |",
        *(
            ["| `comm_group.json` | the process groups (`pg_name` -> NPUs), `--comm-group-configuration` |"]
            if bundle.comm_groups
            else []
        ),
        "| `collhub-bundle.json` | what collhub wrote, machine-readable |",
        "",
        "## Running",
        "",
        "```",
        "./run.sh /path/to/AstraSim_Analytical_Congestion_Unaware   # or ..._Congestion_Aware (1-D networks only)",
        "# or: COLLHUB_ASTRASIM_BIN=/path/to/binary ./run.sh",
        "```",
        "",
        "`run.sh` changes into this directory first: ASTRA-sim resolves the paths in `system.json` "
        "against its working directory. Logs go to `log/log.log` and `log/err.log` here. The same "
        "command by hand:",
        "",
        "```",
        "cd <this directory>",
        "<binary> " + " ".join(bundle.args()),
        "```",
        "",
        "## Expected output",
        "",
        "Every rank i prints `sys[i] finished, T cycles, exposed communication E cycles.`. One cycle is "
        "1 ns; the collective time is the largest T.",
    ]
    for mode, value in bundle.predicted_ns.items():
        if isinstance(value, int):
            lines += [
                "",
                f"**Expected with the congestion-{mode} binary: `sys[i] finished, {value} cycles`** "
                f"(the largest T; {value / 1000:g} us), as predicted by collhub's `hub.simulate`.",
            ]
        else:
            lines += ["", f"No prediction for the {mode} backend: {value}."]
    if bundle.algorithm is not None:
        lines += [
            "",
            "On a custom collective ASTRA-sim charges only network time and COMP `duration_micros` "
            "(no endpoint delay, no memory-bus cost, no dataset splits; the workload's `comm_size` is "
            "ignored), so `collhub` with `hub.simulate` on the same topology and backend predicts T to the ns.",
        ]
    keys = ", ".join(f"`{k}`" for k in system)
    lines += ["", f"`system.json` keys: {keys}.", ""]
    return "\n".join(lines)
