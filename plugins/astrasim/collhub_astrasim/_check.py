"""A bundle must run on the real binaries: before a bundle is published, its files are run
through ``hub.sim.run_astra_sim`` (the drop-in for ASTRA-sim's analytical binaries, which shares
hub.simulate's rules for what ASTRA-sim aborts on, ``hub.sim._astrasim.refusals``), for the backend it is
written for, and refused with ASTRA-sim's reason (a bundle for ``any`` backend must run on at
least one of them: the 2-NPU Ring, for one, runs on the congestion-unaware binary only)."""

from __future__ import annotations

from pathlib import Path

from hub.errors import HubError, UsageError

__all__ = ["check_runs"]


def check_runs(folder: Path, args: list[str], backend: str, ndims: int) -> None:
    """Raise :class:`UsageError` when ASTRA-sim would abort on the bundle in ``folder``."""
    from hub.sim import run_astra_sim

    backends = ["unaware", "aware"] if backend == "any" else [backend]
    why = []
    for b in backends:
        if b == "aware" and ndims > 1 and backend == "any":
            continue
        try:
            out = run_astra_sim([*args, f"--logging-folder={folder / 'log'}"], backend=b, cwd=folder)
        except HubError:  # an input the drop-in does not reproduce (e.g. oneRing): not a known abort
            return
        if out.exit_code == 0:
            return
        why.append(f"AstraSim_Analytical_Congestion_{b.capitalize()}: {out.error}")
    raise UsageError(
        "the bundle would not run on " + "; nor on ".join(why),
        hint="give the network a latency (or larger messages), or choose the other backend",
    )
