"""Load a pipeline file as plain data plus the source position of every YAML path.

Loading never executes anything from the file: PyYAML's ``SafeLoader`` builds only plain
scalars, lists and mappings and refuses tags such as ``!!python/object``. We compose the node
tree first so that every value keeps its ``start_mark``, then construct the data from that same
tree.

Hostile files are bounded (see :mod:`hub.pipeline._file.limits`): the nesting depth is checked on the event
stream (no recursion), then the composed node graph is measured with aliases expanded before
anything walks it, so an alias bomb or a recursive alias is an issue at its position, and every
scalar is constructed once under a guard, so a value PyYAML cannot build (a 5000-digit int, the
date 2024-13-45) is an issue too, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ...errors import Issue, PipelineValidationError
from .limits import LIMITS, limit

__all__ = ["LoadedFile", "Position", "load_text", "load_value", "format_path"]


@dataclass(frozen=True)
class Position:
    """1-based line and column of a node in the file."""

    line: int
    column: int


def _pos(mark: Any) -> Position:
    return Position(mark.line + 1, mark.column + 1)


def format_path(parts: tuple[Any, ...] | list[Any]) -> str:
    """``("sources", "ring", "transforms", 0, "use")`` -> ``sources.ring.transforms[0].use``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


@dataclass
class LoadedFile:
    """A parsed pipeline: the data and, per YAML path, where its key and value start."""

    data: Any
    file: str
    text: str
    values: dict[tuple[Any, ...], Position] = field(default_factory=dict)
    keys: dict[tuple[Any, ...], Position] = field(default_factory=dict)

    def locate(self, path: tuple[Any, ...], *, key: bool = False) -> Position | None:
        """Position of ``path`` (its key when ``key``), else of its nearest located ancestor."""
        parts = tuple(path)
        if key and parts in self.keys:
            return self.keys[parts]
        while parts:
            if parts in self.values:
                return self.values[parts]
            parts = parts[:-1]
        return self.values.get((), Position(1, 1))

    def issue(self, path: tuple[Any, ...], message: str, *, hint: str | None = None, key: bool = False) -> Issue:
        """Make an :class:`Issue` located at ``path``."""
        pos = self.locate(path, key=key)
        return Issue(
            message=message,
            path=format_path(path),
            file=self.file,
            line=pos.line if pos else None,
            column=pos.column if pos else None,
            hint=hint,
        )


def _walk(node: yaml.Node, path: tuple[Any, ...], loaded: LoadedFile, issues: list[Issue], seen: set[int]) -> None:
    loaded.values.setdefault(path, _pos(node.start_mark))
    if id(node) in seen:  # an alias points back to a node we have visited
        return
    seen = seen | {id(node)}
    if isinstance(node, yaml.MappingNode):
        first: dict[Any, Position] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key: Any = key_node.value
            if key == "<<":  # merge key: its content lands in the parent, positions stay approximate
                continue
            if key_node.tag.endswith(":int"):
                key = int(key) if key.lstrip("-").isdigit() else key
            if key in first:
                p = first[key]
                issues.append(
                    Issue(
                        message=f"duplicate key {key!r} (first defined at line {p.line})",
                        path=format_path(path + (key,)),
                        file=loaded.file,
                        line=key_node.start_mark.line + 1,
                        column=key_node.start_mark.column + 1,
                        hint="YAML keeps only the last value; remove one of them",
                    )
                )
            first[key] = _pos(key_node.start_mark)
            loaded.keys[path + (key,)] = _pos(key_node.start_mark)
            _walk(value_node, path + (key,), loaded, issues, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, path + (i,), loaded, issues, seen)


def _conflict_markers(text: str, file: str) -> list[Issue]:
    issues = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line.rstrip() == "=======":
            issues.append(
                Issue(
                    message="merge-conflict marker",
                    file=file,
                    line=n,
                    column=1,
                    hint="resolve the version-control conflict first",
                )
            )
    return issues


def _fail(
    file: str,
    message: str,
    mark: Any = None,
    hint: str | None = None,
    *,
    line: int | None = None,
    column: int | None = None,
) -> PipelineValidationError:
    if mark is not None:
        line, column = mark.line + 1, mark.column + 1
    hint = hint or "fix the file at that position; pipeline files are plain YAML data (see docs/pipeline.md)"
    where = Issue(message=message, file=file, line=line, column=column)
    return PipelineValidationError(
        str(where), issues=[Issue(message, file=file, line=line, column=column, hint=hint)], hint=hint
    )


def _limit_hint(name: str) -> str:
    var, default = LIMITS[name]
    return f"set {var} to raise the limit (default {default}) if the file is trusted"


def _check_depth(text: str, file: str) -> None:
    """Refuse nesting deeper than the limit, on the event stream (PyYAML's composer recurses)."""
    max_depth = limit("depth")
    depth = 0
    parser = yaml.SafeLoader(text)
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > max_depth:
                    raise _fail(file, f"nesting deeper than {max_depth} levels", event.start_mark, _limit_hint("depth"))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    finally:
        parser.dispose()


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_graph(root: yaml.Node, loader: yaml.SafeLoader, file: str) -> None:
    """Measure the tree the aliases expand to (iteratively) and construct every scalar once.

    ``size``/``depth`` of a node are those of its expanded subtree; an alias is the same node
    object, so each distinct node is visited once and a bomb costs its file size, not its expansion.
    """
    max_nodes, max_depth = limit("nodes"), limit("depth")
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            on_path.discard(key)
            if size[key] > max_nodes:
                raise _fail(
                    file,
                    f"the aliases here expand to more than {max_nodes} YAML nodes",
                    node.start_mark,
                    _limit_hint("nodes"),
                )
            if depth[key] > max_depth:
                raise _fail(
                    file, f"the aliases here nest deeper than {max_depth} levels", node.start_mark, _limit_hint("depth")
                )
            continue
        if key in size:
            continue
        if key in on_path:
            raise _fail(
                file,
                "recursive alias: a node contains itself",
                node.start_mark,
                "pipeline files are trees; an alias may not refer to a node that encloses it",
            )
        if isinstance(node, yaml.ScalarNode):
            try:
                loader.construct_object(node)
            except yaml.YAMLError:
                raise
            except Exception as exc:  # noqa: BLE001 - e.g. int with 5000 digits, a 13th month
                raise _fail(
                    file,
                    f"cannot read the value {node.value[:40]!r}: {str(exc).split(';')[0][:120]}",
                    node.start_mark,
                    "quote it to keep it as a string",
                ) from None
            size[key], depth[key] = 1, 1
            continue
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def _codepoint(character: Any) -> int:
    return character if isinstance(character, int) else ord(str(character)[:1] or "\0")


def _position(text: str, index: int) -> tuple[int, int]:
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _yaml_issue(exc: yaml.MarkedYAMLError, file: str) -> PipelineValidationError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or str(exc)
    hint = None
    if "could not determine a constructor" in problem or "tag" in problem:
        hint = "pipeline files are plain data; tags such as !!python/... are not allowed"
    elif "\\t" in problem or "\t" in problem or "tab" in problem:
        hint = "indent with spaces, not tabs"
    return _fail(file, f"YAML error: {' '.join(problem.split())}", mark, hint)


def load_text(text: str, file: str = "<pipeline>") -> LoadedFile:
    """Parse ``text`` safely; raise :class:`PipelineValidationError` on YAML errors, duplicate keys
    or a file past one of the limits of :mod:`hub.pipeline._file.limits`."""
    loaded = LoadedFile(data=None, file=file, text=text)
    issues = _conflict_markers(text, file)
    if issues:
        raise PipelineValidationError(f"{file}: {len(issues)} issue(s)", issues=issues, hint=issues[0].hint)
    if len(text) > limit("bytes"):
        raise _fail(
            file,
            f"the file has {len(text)} characters, more than the limit of {limit('bytes')}",
            line=1,
            column=1,
            hint=_limit_hint("bytes"),
        )
    try:
        _check_depth(text, file)
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                raise _fail(file, "the file is empty", line=1, column=1, hint="start with 'version: 1'")
            _check_graph(node, loader, file)
            _walk(node, (), loaded, issues, set())
            loaded.data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        raise _yaml_issue(exc, file) from None
    except yaml.reader.ReaderError as exc:  # a NUL byte or another character YAML forbids
        line, column = _position(text, exc.position)
        raise _fail(
            file,
            f"YAML error: character U+{_codepoint(exc.character):04X} is not allowed in YAML",
            line=line,
            column=column,
            hint="pipeline files are UTF-8 text without control characters",
        ) from None
    except yaml.YAMLError as exc:  # errors without a position
        raise _fail(file, f"YAML error: {' '.join(str(exc).split())}") from None
    except RecursionError:  # belt and braces: the depth checks above should make this unreachable
        raise _fail(
            file, "YAML error: the file nests too deeply to read", line=1, column=1, hint=_limit_hint("depth")
        ) from None
    if issues:
        raise PipelineValidationError(f"{file}: {len(issues)} issue(s)", issues=issues, hint=issues[0].hint)
    return loaded


def load_value(text: str, label: str = "<value>") -> Any:
    """One YAML value (e.g. a ``--set`` value) under the same limits as a pipeline file; raises
    :class:`PipelineValidationError` with the position inside ``text``."""
    if len(text) > limit("bytes"):
        raise _fail(
            label,
            f"{len(text)} characters, more than the limit of {limit('bytes')}",
            line=1,
            column=1,
            hint=_limit_hint("bytes"),
        )
    try:
        _check_depth(text, label)
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_graph(node, loader, label)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        raise _yaml_issue(exc, label) from None
    except yaml.reader.ReaderError as exc:
        line, column = _position(text, exc.position)
        raise _fail(
            label,
            f"character U+{_codepoint(exc.character):04X} is not allowed in YAML",
            line=line,
            column=column,
            hint="remove control characters",
        ) from None
    except yaml.YAMLError as exc:
        raise _fail(label, f"YAML error: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise _fail(label, "the value nests too deeply to read", line=1, column=1, hint=_limit_hint("depth")) from None


def load_file(path: str | Path) -> LoadedFile:
    """Read and parse a pipeline file."""
    p = Path(path)
    try:
        text = _read_bounded(p)
    except FileNotFoundError:
        issue = Issue(message="file not found", file=str(p))
        raise PipelineValidationError(f"{p}: file not found", issues=[issue], hint="check the path") from None
    except UnicodeDecodeError as exc:
        data = exc.object[: exc.start]
        line = data.count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n") + 1) + 1
        raise _fail(
            str(p),
            f"not UTF-8 text: byte {exc.object[exc.start]:#04x} cannot be decoded",
            line=line,
            column=column,
            hint="save the file as UTF-8",
        ) from None
    except OSError as exc:
        raise _fail(
            str(p), f"cannot read the file: {exc}", hint="give the path of a regular pipeline file (YAML)"
        ) from None
    return load_text(text, str(p))


def _read_bounded(p: Path) -> str:
    """The file's text, refusing non-regular files (a fifo would block) and files past the limit."""
    import os
    import stat

    max_bytes = limit("bytes")
    if stat.S_ISDIR(os.stat(p).st_mode):
        raise OSError("not a regular file (directory)")
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fh.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(f"not a regular file ({'directory' if stat.S_ISDIR(mode) else 'fifo, device or socket'})")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(f"larger than the limit of {max_bytes} bytes ({_limit_hint('bytes')})")
    return data.decode("utf-8")
