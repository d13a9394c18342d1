"""Reading ASTRA-sim's analytical ``network.yml``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import TopologyFormatError
from ._dims import KINDS, Dimension, DimensionalTopology
from ._parse import MAX_BANDWIDTH, MAX_LATENCY, MAX_NPUS, MIN_BANDWIDTH

__all__ = ["parse_network_yml", "read_network_yml"]

_KEYS = ("topology", "npus_count", "bandwidth", "latency")


#: a network.yml is a few hundred bytes; a larger one is not one
_MAX_BYTES = 1 << 20


def read_network_yml(path: str | Path) -> DimensionalTopology:
    """Read a ``network.yml`` file; :class:`TopologyFormatError` names the file and the key."""
    from ..inputs import read_input

    p = Path(path)

    def error(where: str, message: str, hint: str | None) -> TopologyFormatError:
        return TopologyFormatError(f"{where}: cannot read network file: {message}", hint=hint)

    try:  # a fifo or a silent pipe cannot block (hub.inputs); network.yml files are a few lines
        text = read_input(p, _MAX_BYTES, error=error).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TopologyFormatError(f"{p}: cannot read network file: not UTF-8 ({exc.reason})") from None
    return parse_network_yml(text, source=str(p))


def parse_network_yml(text: str, *, source: str = "<network.yml>") -> DimensionalTopology:
    """Parse ``network.yml`` text (safely); all four keys must be lists of equal length."""
    import yaml

    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise TopologyFormatError(f"{source}{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(doc, dict):
        raise TopologyFormatError(
            f"{source}: expected a mapping with keys {', '.join(_KEYS)}",
            hint="example: topology: [ Ring ] / npus_count: [ 8 ] / bandwidth: [ 50.0 ] / latency: [ 500.0 ]",
        )
    lists: dict[str, list[Any]] = {}
    for key in _KEYS:
        if key not in doc:
            raise TopologyFormatError(f"{source}: missing key '{key}'", hint="network.yml needs: " + ", ".join(_KEYS))
        value = doc[key]
        if not isinstance(value, list):
            raise TopologyFormatError(
                f"{source}: '{key}' must be a YAML list (one entry per dimension), got {value!r}",
                hint=f"write '{key}: [ {value} ]'; ASTRA-sim reads a bare scalar as an empty list and aborts",
            )
        if not value:
            raise TopologyFormatError(f"{source}: '{key}' is an empty list")
        lists[key] = value
    lengths = {k: len(v) for k, v in lists.items()}
    if len(set(lengths.values())) != 1:
        raise TopologyFormatError(
            f"{source}: lists differ in length ({', '.join(f'{k}: {n}' for k, n in lengths.items())})",
            hint="every key needs one entry per dimension",
        )
    dims = []
    for i in range(lengths["topology"]):
        kind = lists["topology"][i]
        if kind not in KINDS:
            near = [k for k in KINDS if isinstance(kind, str) and k.lower() == kind.lower()]
            raise TopologyFormatError(
                f"{source}: 'topology'[{i}] = {kind!r} is not a building block",
                hint=f"did you mean {near[0]!r}? (names are case-sensitive)" if near else "one of: " + ", ".join(KINDS),
            )
        npus = lists["npus_count"][i]
        if isinstance(npus, bool) or not isinstance(npus, int) or not 2 <= npus <= MAX_NPUS:
            raise TopologyFormatError(
                f"{source}: 'npus_count'[{i}] = {str(npus)[:40]}; must be an integer > 1 and at most {MAX_NPUS}",
                hint="npus_count is the number of NPUs of the dimension",
            )
        vals = []
        for key in ("bandwidth", "latency"):
            v = lists[key][i]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TopologyFormatError(
                    f"{source}: '{key}'[{i}] = {str(v)[:40]!r} is not a number", hint=f"{key} takes numbers"
                )
            vals.append(float(v))
        bw, lat = vals
        # the ranges of topology strings (docs/topology.md): what real links span; inf, NaN and
        # a 31-digit latency are impossible input, not a simulation of years or an overflow
        if not MIN_BANDWIDTH <= bw <= MAX_BANDWIDTH:
            raise TopologyFormatError(
                f"{source}: 'bandwidth'[{i}] = {bw:g}; must be {MIN_BANDWIDTH:g}..{MAX_BANDWIDTH:g} (GB/s)",
                hint="bandwidth is per link in GB/s: real links span 1 MB/s .. 1 PB/s (docs/topology.md)",
            )
        if not 0 <= lat <= MAX_LATENCY:
            raise TopologyFormatError(
                f"{source}: 'latency'[{i}] = {lat:g}; must be 0..{MAX_LATENCY:g} (ns)",
                hint="latency is per hop in ns, e.g. 500 (docs/topology.md)",
            )
        dims.append(Dimension(kind, npus, bw, lat))
    total = 1
    for d in dims:
        total *= d.npus
    if total > MAX_NPUS:
        raise TopologyFormatError(
            f"{source}: {total} NPUs in all (the product of npus_count), more than {MAX_NPUS}",
            hint="a network of more NPUs than any machine has is not a network to simulate",
        )
    return DimensionalTopology(dims)
