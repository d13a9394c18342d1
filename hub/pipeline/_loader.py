"""Load a pipeline file as plain data plus the source position of every YAML path.

Loading never executes anything from the file: PyYAML's ``SafeLoader`` builds only plain
scalars, lists and mappings and refuses tags such as ``!!python/object``. We compose the node
tree first so that every value keeps its ``start_mark``, then construct the data from that same
tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import Issue, PipelineValidationError

__all__ = ["LoadedFile", "Position", "load_text", "format_path"]


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


def load_text(text: str, file: str = "<pipeline>") -> LoadedFile:
    """Parse ``text`` safely; raise :class:`PipelineValidationError` on YAML errors or duplicate keys."""
    loaded = LoadedFile(data=None, file=file, text=text)
    issues = _conflict_markers(text, file)
    if issues:
        raise PipelineValidationError(f"{file}: {len(issues)} issue(s)", issues=issues)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise PipelineValidationError(
                f"{file}: the file is empty",
                issues=[Issue("the file is empty", file=file, line=1, column=1, hint="start with 'version: 1'")],
            )
        _walk(node, (), loaded, issues, set())
        loaded.data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        hint = None
        if "could not determine a constructor" in problem or "tag" in problem:
            hint = "pipeline files are plain data; tags such as !!python/... are not allowed"
        elif "\\t" in problem or "\t" in problem or "tab" in problem:
            hint = "indent with spaces, not tabs"
        issue = Issue(
            message=f"YAML error: {problem}",
            file=file,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
            hint=hint,
        )
        raise PipelineValidationError(f"{issue}", issues=[issue]) from None
    except yaml.YAMLError as exc:  # errors without a position
        issue = Issue(message=f"YAML error: {exc}", file=file)
        raise PipelineValidationError(str(issue), issues=[issue]) from None
    finally:
        loader.dispose()
    if issues:
        raise PipelineValidationError(f"{file}: {len(issues)} issue(s)", issues=issues)
    return loaded


def load_file(path: str | Path) -> LoadedFile:
    """Read and parse a pipeline file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        issue = Issue(message="file not found", file=str(p))
        raise PipelineValidationError(f"{p}: file not found", issues=[issue], hint="check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        issue = Issue(message=f"cannot read the file: {exc}", file=str(p))
        raise PipelineValidationError(f"{p}: cannot read the file: {exc}", issues=[issue]) from None
    return load_text(text, str(p))
