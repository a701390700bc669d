"""Config problems in plain words: the line, what a key expects, the kind of value found (never
the value: a config may hold a secret), the closest known key for an unknown one."""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Callable
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from npumon.yamlfile import LineOf, key_path, on_line

_HINTS = {
    "web.listen_address": "expected [host]:port, e.g. ':9732', '127.0.0.1:9732' or '[::]:9732'",
}
_FRIENDLY = {
    "tuple_type": "expected a list, e.g. [npu-smi] or [/usr/local/bin/npu-smi, --flag]",
    "list_type": "expected a list, e.g. [a, b]",
    "int_parsing": "expected a whole number",
    "int_type": "expected a whole number",
    "float_parsing": "expected a number",
    "float_type": "expected a number",
    "bool_parsing": "expected true or false",
    "bool_type": "expected true or false",
    "dict_type": "expected a mapping (key: value lines)",
    "model_type": "expected a mapping (key: value lines)",
    "string_type": "expected text",
    "byte_size": "expected a size such as 256MiB, 2GiB or 500MB",
    "byte_size_unit": "expected a size such as 256MiB, 2GiB or 500MB",
    "missing": "required, not given",
}


def kind_of(value: Any) -> str:
    """What a value is, in words: errors never print a config file's content (it may be a
    secret), only key paths and types."""
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "nothing (an empty value)"
    names = {
        str: "text",
        int: "a whole number",
        float: "a number",
        list: "a list",
        tuple: "a list",
        dict: "a mapping",
    }
    return next(
        (name for kind, name in names.items() if isinstance(value, kind)), type(value).__name__
    )


def _unwrap(annotation: Any) -> list[Any]:
    """The types one value of ``annotation`` can hold (X | None -> [X, None])."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [t for arg in get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _keys_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys the mapping at ``loc`` may have (empty when it is no model)."""
    annotations: list[Any] = [root]
    for part in loc:
        inner: list[Any] = []
        for annotation in annotations:
            origin, args = get_origin(annotation), get_args(annotation)
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                field = annotation.model_fields.get(str(part))
                inner += _unwrap(field.annotation) if field is not None else []
            elif origin is tuple and args:
                inner += _unwrap(args[0])
            elif origin is dict and len(args) == 2:
                inner += _unwrap(args[1])
        annotations = inner
    return [
        name
        for a in annotations
        if isinstance(a, type) and issubclass(a, BaseModel)
        for name in a.model_fields
    ]


def _unknown_key(root: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """``unknown key``, with the closest known key (``intreval`` -> ``interval``)."""
    close = difflib.get_close_matches(str(loc[-1]), _keys_at(root, loc[:-1]), n=1, cutoff=0.6)
    return f"unknown key, did you mean {close[0]}?" if close else "unknown key"


def _message(item: Any) -> str:
    if item["type"] == "literal_error":  # ctx: "'debug', 'info', 'warning' or 'error'"
        return "expected one of " + ", ".join(re.findall(r"'([^']*)'", item["ctx"]["expected"]))
    return str(item["msg"]).removeprefix("Value error, ")


def problems(
    error: ValidationError,
    root: type[BaseModel],
    lines: LineOf | None = None,
    written: Callable[[tuple[int | str, ...]], tuple[int | str, ...]] | None = None,
) -> list[str]:
    """One line per problem: the line (``lines``: of a loaded file), the dotted path, what was
    expected, and what kind was found. ``written``: where the file wrote a key the model reads
    elsewhere (a deprecated alias)."""
    out = []
    for item in error.errors():
        loc = written(item["loc"]) if written else item["loc"]
        path = key_path(loc)
        where = on_line(lines(loc) if lines else None) + path
        if item["type"] == "extra_forbidden":
            out.append(f"{where}: {_unknown_key(root, item['loc'])}")
            continue
        message = _HINTS.get(path) or _FRIENDLY.get(item["type"]) or _message(item)
        if item["type"] != "missing" and "got" not in message:
            message += f", got {kind_of(item.get('input'))}"
        out.append(f"{where}: {message}")
    return out
