"""``collhub astra-sim ARGS...``: the drop-in for ASTRA-sim's analytical binaries
(``hub.sim._astrasim.dropin``; its own console script is ``collhub-astra-sim``). Every argument goes to
it untouched: ASTRA-sim's flags are cxxopts ``--name=value`` options, which Typer would not parse
the same way (unknown flags are ignored there, as the binaries do).

Exit codes: 0 the run finished (also with ranks that never finish, as ASTRA-sim exits 0); 1
ASTRA-sim itself aborts on this input (one line names the reason); 2 bad usage; 3 an input file
that cannot be read.
"""

from __future__ import annotations

import click

__all__ = ["astra_sim_command"]


@click.command(
    name="astra-sim",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
    help="A drop-in for AstraSim_Analytical_Congestion_{Aware,Unaware}: the same flags and files, "
    "the same stdout lines; plus --backend aware|unaware (docs/simulator.md).",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def astra_sim_command(args: tuple[str, ...]) -> None:
    from ..sim._astrasim.dropin import main

    raise SystemExit(main(list(args)))
