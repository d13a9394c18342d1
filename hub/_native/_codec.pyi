# Type stub of the compiled extension hub/_native/_codec.c (see its header comment).
from typing import Any

# anything with the buffer protocol (collections.abc.Buffer is Python 3.12+)
Buffer = Any

def configure(
    names: tuple[bytes, ...],
    defaults: tuple[int, ...],
    columns: tuple[int, ...],
    lo: tuple[int, ...],
    hi: tuple[int, ...],
    /,
) -> None: ...
def encode_rank(
    astrasim: bool,
    rank: int,
    columns: tuple[Buffer, ...],
    dep_ptr: Buffer,
    dep_pos: Buffer,
    names: Buffer | None,
    names_off: Buffer | None,
    extra: Buffer | None,
    extra_off: Buffer | None,
    out: Buffer | None = None,
    /,
) -> bytes | int: ...
def frame_files(
    data: Buffer, bases: Buffer, sizes: Buffer, every: bool = True, /
) -> tuple[bytearray | None, bytearray | None, bytearray | None, int]: ...
def decode_batch(
    data: Buffer, bases: Buffer, sizes: Buffer, counts: Buffer, columns: tuple[Buffer, ...], dep_ptr: Buffer, /
) -> tuple[bytearray, bytearray, bytearray, bytearray, bytearray]: ...
def decode_metadata(
    data: Buffer, starts: Buffer, ends: Buffer, /
) -> list[tuple[str, tuple[tuple[str, int, Any], ...]] | None]: ...
def decode_workload(
    data: Buffer, starts: Buffer, ends: Buffer, ranks: int, node_cls: type, types: tuple[Any, ...], /
) -> tuple[list[Any], bytearray, bytearray, bytearray] | None: ...
def scan_workload_file(
    data: Buffer, ranks: int, /
) -> tuple[bytearray, bytearray, bytearray, bytearray, bytearray, bytearray, set[str], bytearray] | None: ...
def node_types(data: Buffer, starts: Buffer, ends: Buffer, /) -> int: ...
def encode_workload(nodes: list[Any], typing: dict[str, str], /) -> bytes | None: ...
