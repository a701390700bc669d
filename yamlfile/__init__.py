"""YAML files read within bounds (size, nesting, alias expansion), with errors that never quote
them: a config path may be a symlink to a file that holds secrets (docs/architecture.md)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 1024 * 1024
"""A YAML file above this size is refused unread (npumon's own config is about 10 KB)."""
MAX_NODES = 100_000
"""Values in a document counted with every alias expanded: refuses alias bombs before the
document is built (a validator would walk each alias' copy again)."""
MAX_DEPTH = 64
"""Nesting levels; deeper documents would exhaust Python's recursion limit while parsing."""

LineOf = Callable[[Sequence[int | str]], int | None]
"""The line of a key path (a pydantic error location) in the file it came from."""

_NAME = re.compile(r"[A-Za-z0-9_./@+-]{1,64}\Z")


class YamlFileError(Exception):
    """A file that cannot be read, is above a limit or is not YAML; the message never quotes it."""


class _Refused(Exception):
    def __init__(self, what: str, mark: Any) -> None:
        super().__init__(what)
        self.what, self.mark = what, mark


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader counting nodes as if aliases were expanded, and nesting, while composing."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._nodes = 0
        self._depth = 0
        self._sizes: dict[str, int] = {}  # anchor -> nodes it expands to

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self.anchors and event.anchor not in self._sizes:
                raise _Refused(
                    "an alias inside its own anchor (a recursive value)", event.start_mark
                )
            self._count(self._sizes.get(str(event.anchor), 1), event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(f"nested deeper than the limit of {MAX_DEPTH} levels", event.start_mark)
        start = self._nodes
        self._count(1, event.start_mark)
        node = super().compose_node(parent, index)
        self._depth -= 1
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._sizes[anchor] = self._nodes - start
        return node

    def _count(self, nodes: int, mark: Any) -> None:
        self._nodes += nodes
        if self._nodes > MAX_NODES:
            raise _Refused(
                f"more than the limit of {MAX_NODES} values with its aliases expanded"
                " (an alias bomb?)",
                mark,
            )


@dataclass(frozen=True)
class YamlDocument:
    """The loaded data and the node tree it came from, to tell the line of a key path."""

    data: Any
    root: yaml.Node | None

    def line(self, loc: Sequence[int | str]) -> int | None:
        """The line of the deepest key or item of ``loc`` (a pydantic error location)."""
        node, line = self.root, None
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                pair = next((kv for kv in node.value if kv[0].value == str(part)), None)
                if pair is None:
                    break
                line, node = pair[0].start_mark.line + 1, pair[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if not 0 <= part < len(node.value):
                    break
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                break
        return line


def load_yaml(path: Path) -> YamlDocument:
    """Read one YAML document within MAX_BYTES, MAX_NODES and MAX_DEPTH."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)
    except OSError as error:
        raise YamlFileError(f"cannot read: {error.strerror or error}") from None
    if len(raw) > MAX_BYTES:
        raise YamlFileError(
            f"refused {path}: larger than the limit of {MAX_BYTES} bytes for a YAML file"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise YamlFileError(f"not UTF-8 text: {path}, byte {error.start + 1}") from None
    loader = _BoundedLoader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except _Refused as refused:
        raise YamlFileError(
            f"refused {path}, line {refused.mark.line + 1}: {refused.what}"
        ) from None
    except yaml.YAMLError as error:
        raise YamlFileError(yaml_problem(path, error)) from None
    finally:
        loader.dispose()
    return YamlDocument(data, root)


def yaml_problem(path: Path, error: yaml.YAMLError) -> str:
    """Where and what, without PyYAML's quote of the line (the file may hold a secret)."""
    mark = getattr(error, "problem_mark", None)
    where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
    what = getattr(error, "problem", None) or type(error).__name__
    context, begun = getattr(error, "context", None), getattr(error, "context_mark", None)
    if context:
        what += f" ({context}" + (f" begun on line {begun.line + 1})" if begun else ")")
    return f"not valid YAML at {where}: {what}"


def key_path(loc: Sequence[int | str]) -> str:
    """``chips.timeout``; a key that is not a name (a line of some other file format, perhaps
    a secret) is not shown."""
    parts = [p if isinstance(p, int) or _NAME.match(p) else "<key not shown>" for p in loc]
    return ".".join(str(p) for p in parts) or "(top level)"


def on_line(line: int | None) -> str:
    """The prefix of a problem found on a known line."""
    return f"line {line}: " if line is not None else ""
