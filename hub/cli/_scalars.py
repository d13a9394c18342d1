"""``--set`` values that need no YAML parser: plain integers, plain words and plain file paths.

``collhub produce hub.ring --set ranks=8 --set collective=allreduce`` (or ``consume ... --set size=1MiB``)
is how the CLI is used most;
importing PyYAML and the pipeline loader for ``8`` and ``allreduce`` costs more than the rest of
parsing the command line. A value qualifies only when PyYAML's safe loader is known to read it
as that very ``int`` or ``str``; anything else (lists, floats, quotes, spaces, the YAML 1.1 words
``yes``/``no``/``on``/``off``/``true``/``false``/``null`` in any case, ``0x10``, ``1_000``,
``1:30``) goes to the loader, so the answer is always the loader's
(``tests/cli/test_scalars.py`` compares the two).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["NOT_PLAIN", "plain_value"]

#: returned when the value needs the YAML loader
NOT_PLAIN: Any = object()
#: longer values go to the loader, which applies the pipeline's size limits
_MAX_CHARS = 256

# decimal integers without underscores or leading zeros (0123 is octal in YAML 1.1)
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]{0,17})")
# a word: starts with a letter (so never a number, a timestamp or an indicator), no spaces or
# flow/comment characters; ':' only inside ("ring:8" is a string, "a:" a mapping)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*(?::[A-Za-z0-9_.\-]+)*")
# a file path: '/', './' or '../' first (never an indicator, number or null), then the word
# characters and '/' only; no ':' (a mapping or a time), no spaces, no '#' (a comment)
_PATH = re.compile(r"(?:/|\./|\.\./)[A-Za-z0-9_.\-/]*")
# a size as the hub writes them (1MiB, 64K, 2GB): digits then letters only, never a YAML number
# (no leading 0 for 0x/0o/0b, no '.', '_', ':' or sign, so neither a float, a base-60 int nor a date)
_SIZE = re.compile(r"[1-9][0-9]{0,17}[A-Za-z]+")
# what YAML 1.1 resolves to bool or null among words (any case is sent to the loader)
_RESERVED = frozenset({"yes", "no", "true", "false", "on", "off", "null", "y", "n"})


def plain_value(raw: str) -> Any:
    """``raw`` as PyYAML's safe loader reads it when that is certain without it, else :data:`NOT_PLAIN`."""
    if len(raw) > _MAX_CHARS:
        return NOT_PLAIN
    if _INT.fullmatch(raw):
        return int(raw)
    if (_WORD.fullmatch(raw) and raw.lower() not in _RESERVED) or _SIZE.fullmatch(raw):
        return raw
    if _PATH.fullmatch(raw):  # --set path=/data/ring.xml: no YAML loader for a file name
        return raw
    return NOT_PLAIN
