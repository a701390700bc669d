"""A small PromQL tokenizer that finds the metric names an expression selects."""

from __future__ import annotations

import re

# Words that may stand where a metric name could: aggregations, set and matching keywords.
KEYWORDS = frozenset({
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "and", "or", "unless", "by", "without", "on", "ignoring",
    "group_left", "group_right", "bool", "offset", "atan2", "inf", "nan",
})
# Keywords followed by a parenthesised list of label names, not expressions.
LABEL_LIST_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})

_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_TOKEN = re.compile(
    r"(?:\d+(?:ms|[smhdwy]))+(?![A-Za-z0-9_])"  # durations such as 5m or 1h30m (after `offset`)
    r"|[A-Za-z_:][A-Za-z0-9_:]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\S"
)
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$", re.S)


def _strip_brackets(text: str, opener: str, closer: str) -> str:
    """Drop everything between matching `opener`/`closer` (matchers, ranges)."""
    out: list[str] = []
    depth = 0
    for char in text:
        if char == opener:
            depth += 1
        elif char == closer and depth:
            depth -= 1
        elif not depth:
            out.append(char)
    return "".join(out)


def metric_names(expr: str) -> set[str]:
    """Metric names selected by a PromQL expression (or a Grafana `label_values(...)` query)."""
    match = _LABEL_VALUES.match(expr)
    if match:
        expr = match.group(1)
    text = _STRING.sub('""', expr)
    text = _strip_brackets(_strip_brackets(text, "{", "}"), "[", "]")
    tokens = _TOKEN.findall(text)
    names: set[str] = set()
    index = 0
    while index < len(tokens):
        token = tokens[index]
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        if token.lower() in LABEL_LIST_KEYWORDS and following == "(":
            index = tokens.index(")", index) + 1  # skip the label-name list
            continue
        is_identifier = token[0].isalpha() or token[0] in "_:"
        if is_identifier and token.lower() not in KEYWORDS and following != "(":
            names.add(token)
        index += 1
    return names
