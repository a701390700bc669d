"""A small PromQL tokenizer that finds the selectors of an expression and the metrics they name."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Words that may stand where a metric name could: aggregations, set and matching keywords.
KEYWORDS = frozenset(
    {
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "and",
        "or",
        "unless",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "offset",
        "atan2",
        "inf",
        "nan",
    }
)
# Keywords followed by a parenthesised list of label names, not expressions.
LABEL_LIST_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})

_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_TOKEN = re.compile(
    r"(?:\d+(?:ms|[smhdwy]))+(?![A-Za-z0-9_])"  # durations such as 5m or 1h30m (after `offset`)
    r"|[A-Za-z_:][A-Za-z0-9_:]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\S"
)
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$", re.S)
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:\\.|[^"\\])*")\s*,?')


@dataclass(frozen=True)
class Selector:
    """One vector selector: its metric name ("" for `{...}` alone), its matchers, and where the
    name stands in the expression (start, end), so a caller can swap the name."""

    name: str
    matchers: tuple[tuple[str, str, str], ...]  # (label, operator, quoted value)
    span: tuple[int, int]

    def has(self, label: str, operator: str, value: str) -> bool:
        return (label, operator, f'"{value}"') in self.matchers


def _masked(expr: str) -> str:
    """The expression with every string literal blanked to spaces (same length), so positions
    in it are positions in `expr` and no quoted text looks like a name or a bracket."""
    return _STRING.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[0], expr)


def _closing(text: str, start: int, opener: str, closer: str) -> int:
    """Index just past the bracket that closes the one at `start`."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] == opener:
            depth += 1
        elif text[index] == closer:
            depth -= 1
            if not depth:
                return index + 1
    raise ValueError(f"unbalanced {opener}{closer} in {text!r}")


def _matchers(body: str) -> tuple[tuple[str, str, str], ...]:
    found = []
    position = 0
    while position < len(body.rstrip()):
        match = _MATCHER.match(body, position)
        if not match:
            raise ValueError(f"cannot read the matchers {{{body}}}")
        found.append((match.group(1), match.group(2), match.group(3)))
        position = match.end()
    return tuple(found)


def selectors(expr: str) -> list[Selector]:
    """Every vector selector of a PromQL expression, in order."""
    masked = _masked(expr)
    found: list[Selector] = []
    tokens = list(_TOKEN.finditer(masked))
    index = 0
    while index < len(tokens):
        token = tokens[index]
        text = token.group(0)
        following = tokens[index + 1].group(0) if index + 1 < len(tokens) else ""
        if text.lower() in LABEL_LIST_KEYWORDS and following == "(":
            end = _closing(masked, tokens[index + 1].start(), "(", ")")
            while index < len(tokens) and tokens[index].start() < end:
                index += 1  # skip the label-name list
            continue
        if text in "{[":  # matchers of a bare `{...}` selector, or a range / subquery
            end = _closing(masked, token.start(), text, "}" if text == "{" else "]")
            if text == "{":
                found.append(
                    Selector(
                        "",
                        _matchers(expr[token.start() + 1 : end - 1]),
                        (token.start(), token.start()),
                    )
                )
            while index < len(tokens) and tokens[index].start() < end:
                index += 1
            continue
        is_identifier = text[0].isalpha() or text[0] in "_:"
        if is_identifier and text.lower() not in KEYWORDS and following != "(":
            matchers: tuple[tuple[str, str, str], ...] = ()
            end = token.end()
            if following == "{":
                end = _closing(masked, tokens[index + 1].start(), "{", "}")
                matchers = _matchers(expr[tokens[index + 1].start() + 1 : end - 1])
            found.append(Selector(text, matchers, token.span()))
            while index < len(tokens) and tokens[index].start() < end:
                index += 1
            continue
        index += 1
    return found


def unwrap_label_values(query: str) -> str:
    """The series selector of a Grafana `label_values(selector, label)` query, else the query."""
    match = _LABEL_VALUES.match(query)
    return match.group(1) if match else query


def metric_names(expr: str) -> set[str]:
    """Metric names selected by a PromQL expression (or a Grafana `label_values(...)` query)."""
    return {s.name for s in selectors(unwrap_label_values(expr)) if s.name}
