"""msprof-analyze's affinity API rule ("亲和API接口"): torch calls in the host timeline that
torch_npu has a fused, NPU-affine replacement for.

The host timeline is trace_view.json's CPU ranges (torch_npu writes ph, name, pid, tid, ts, dur,
cat, args; ts a string of us) or a db export's PYTORCH_API (startNs, endNs, name in STRING_IDS).
Two sequences are read, as the peer reads them (advisor/analyzer/schedule/fusion_ops):

- aten: the ``aten::*`` ranges by start time, each range nested in the one before it left out
  (the first level of the dispatcher), ``aten::`` stripped: ``permute, contiguous, view, ...``;
- optimizer: the ``Optimizer.step#<class>.step`` ranges, ``Optimizer.step#`` stripped.

A pattern is ops joined by ``-``; ``(a|b)`` with a regex count suffix (``{0,1}``, ``*``) is
optional or repeated. ``PATTERNS`` is the peer's rules/timeline_fusion_ops.yaml at its default
versions (CANN 8.0.0, torch 2.1.0: rule sets 0-3; the MindSpeed rules are for 8.0.RC3 only).
The file is scanned in chunks and never parsed whole, as host.py scans it.

Where the capture has call stacks (``with_stack=True``: the ``Call stack`` arg of each range,
``file(line): function`` frames innermost first, or ``\r\n``-separated), each match is placed at
its first op's first frame outside the Python installation, the model code's line; the peer
prints the whole stacks with their counts.
"""

from __future__ import annotations

import json
import re
import sys
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from npumon.daemon.analysis import confine
from npumon.daemon.analysis.diagnosis import ADVICE
from npumon.daemon.analysis.layout import TRACE_VIEW, inside
from npumon.daemon.analysis.sqlite_tables import select
from npumon.daemon.model.profile import Bottleneck, Thresholds

ATEN = "aten::"
OPTIMIZER = "Optimizer.step#"
_TRANSPOSE = tuple(
    f"({a})-(contiguous){{0,1}}-({b})"
    for a, b in (
        ("permute", "reshape"),
        ("permute", "view"),
        ("transpose", "reshape"),
        ("transpose", "view"),
        ("reshape", "permute"),
        ("reshape", "transpose"),
        ("view", "permute"),
        ("view", "transpose"),
    )
)
_SPLIT = ("slice", "chunk")
# (sequence, replacement, patterns)
PATTERNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("aten", "torch_npu.npu_confusion_transpose", _TRANSPOSE),
    ("aten", "torch_npu.fast_gelu", ("gelu",)),
    (
        "aten",
        "torch_npu.npu_scaled_masked_softmax",
        ("softmax-(mul){0,1}-(masked_fill_)", "softmax-(mul){0,1}-(add)"),
    ),
    ("aten", "optimizer.clip_grad_norm_fused_", ("add-reciprocal-mul",)),
    (
        "aten",
        "torch_npu.npu_fusion_attention",
        (
            "matmul-(add){0,1}-(mul){0,1}-(masked_fill_){0,1}-softmax-(dropout){0,1}-matmul",
            "matmul-(add){0,1}-(mul){0,1}-(add){0,1}-softmax-(dropout){0,1}-matmul",
        ),
    ),
    (
        "aten",
        "torch_npu.npu_rotary_mul",
        ("(chunk)-neg-cat-(mul){0,2}-add", "(slice)-neg-cat-(mul){0,2}-add"),
    ),
    (
        "aten",
        "torch_npu.npu_rms_norm",
        ("(pow){0,1}-(mean){0,1}-(add){0,1}-rsqrt-mul-(type_as){0,1}",),
    ),
    (
        "aten",
        "torch_npu.npu_swiglu",
        tuple(
            f"({s})-{rest}"
            for s in _SPLIT
            for rest in (
                "silu-mul",
                "mul-silu",
                "sigmoid-mul-mul",
                "mul-sigmoid-mul",
                "mul-mul-sigmoid",
            )
        ),
    ),
    (
        "aten",
        "torch_npu.npu_geglu",
        tuple(f"({s})-{rest}" for s in _SPLIT for rest in ("gelu-mul", "mul-gelu")),
    ),
    ("aten", "torch_npu.npu_group_norm_silu", ("group_norm-silu",)),
    ("aten", "torch.addmm", ("mul-mul-add",)),
    ("aten", "torch_npu.npu_add_layer_norm", ("add-layer_norm",)),
    *(
        ("optimizer", f"torch_npu.optim.NpuFused{name}", (f"{name}.step",))
        for name in (
            "AdamW",
            "SGD",
            "Adadelta",
            "Lamb",
            "AdamP",
            "BertAdam",
            "RMSprop",
            "RMSpropTF",
            "Adam",
        )
    ),
)
# name, ts and dur of one event, in torch_npu's field order (ph, name, pid, tid, ts, dur)
_EVENT = re.compile(
    r'"name":\s*"((?:aten::|Optimizer\.step#)[^"]*)"[^{}]*?"ts":\s*"?([0-9.]+)"?,\s*'
    r'"dur":\s*"?([0-9.eE+-]+)"?[,}]'  # up to its end: a number cut by the chunk is no match
)
# the event's call stack (with_stack=True), in its args after dur: a JSON string
_STACK = re.compile(r'"Call stack":\s*"((?:[^"\\]|\\.)*)"')
_FRAME = re.compile(r"(.*)\((\d+)\): (.*)")  # "file(line): function"
_LIBRARY = re.compile(r"[/\\](?:site-packages|dist-packages|lib[/\\]python[\d.]*)[/\\]")
_CHUNK = 8 << 20
_TAIL = 4096  # longer than any event's name-to-dur fields
PLACES_NAMED = 3  # code locations named per replacement


@dataclass(frozen=True, slots=True)
class Range:
    """One host range: start and duration in ns, the name without its prefix, and where the
    model code called it (its call stack's first own frame; "" without a stack)."""

    start_ns: int
    dur_ns: int
    name: str
    where: str = ""


@dataclass(frozen=True, slots=True)
class Timeline:
    """One rank's aten and optimizer sequences."""

    unit: str
    aten: tuple[Range, ...]
    optimizer: tuple[Range, ...]


@dataclass(frozen=True, slots=True)
class Match:
    sequence: str  # aten or optimizer
    replacement: str
    pattern: str
    calls: int  # sequences matched, over every rank read
    host_ns: int  # the host time of their ops
    ranks: int
    where: tuple[tuple[str, int], ...] = ()  # code locations of their first op, most first


def _ns(text: str) -> int | None:
    """``"1736408883688177.930"`` (us) -> ns, exactly (a float loses the ns of such a ts)."""
    whole, _, frac = text.partition(".")
    if whole.isdigit() and (frac.isdigit() or not frac):
        return int(whole) * 1000 + int((frac + "000")[:3])
    try:
        return int(Decimal(text) * 1000)
    except InvalidOperation:
        return None


def _first_level(ranges: list[Range]) -> tuple[Range, ...]:
    """By start; a range inside the last one kept is left out."""
    kept: list[Range] = []
    for r in sorted(ranges, key=lambda r: r.start_ns):
        last = kept[-1] if kept else None
        if (
            last
            and last.start_ns <= r.start_ns
            and r.start_ns + r.dur_ns <= last.start_ns + last.dur_ns
        ):
            continue
        kept.append(r)
    return tuple(kept)


def _timeline(unit: str, names: Sequence[tuple[int, int, str, str]]) -> Timeline:
    aten = [Range(s, d, n.removeprefix(ATEN), w) for s, d, n, w in names if n.startswith(ATEN)]
    optim = [
        Range(s, d, n.removeprefix(OPTIMIZER), w) for s, d, n, w in names if n.startswith(OPTIMIZER)
    ]
    return Timeline(unit, _first_level(aten), tuple(sorted(optim, key=lambda r: r.start_ns)))


def _location(raw: str) -> str:
    """The code location of a ``Call stack`` value as the JSON text holds it
    (``file(line): function;\\r\\n...``, innermost first): the first frame outside the Python
    installation (site-packages, dist-packages, lib/python), as ``file:line (function)``; the
    innermost frame when every one is inside it; "" when there is none."""
    try:
        stack = json.loads(f'"{raw}"')
    except ValueError:
        return ""
    frames = [f.strip() for f in stack.split(";") if f.strip()]
    own = [f for f in frames if not _LIBRARY.search(f) and not f.startswith("<")]
    frame = (own or frames or [""])[0]
    parts = _FRAME.fullmatch(frame)
    return f"{parts[1]}:{parts[2]} ({parts[3]})" if parts else frame


def _scan(text: str, final: bool, found: list[tuple[int, int, str, str]]) -> str:
    """The events of ``text`` into ``found``; what is left to read with the next chunk (an
    event cut by the chunk's end, its call stack included, unless ``final``)."""
    done = 0
    for match in _EVENT.finditer(text):
        close = text.find("}", match.end() - 1)  # the end of the event or of its args
        if close < 0 and not final:
            return text[match.start() :]
        start, length = _ns(match[2]), _ns(match[3])
        if start is not None and length is not None:
            stack = _STACK.search(text, match.end() - 1, close if close >= 0 else len(text))
            where = _location(stack[1]) if stack else ""
            found.append((start, length, sys.intern(match[1]), where))
        done = match.end()
    # past the last event read: an event cut at the chunk's end, read with the next
    return text[max(done, len(text) - _TAIL) :]


def read_trace(unit: str, root: Path, notes: list[str]) -> Timeline | None:
    """The unit's ASCEND_PROFILER_OUTPUT/trace_view.json; None when it has none."""
    path = root / "ASCEND_PROFILER_OUTPUT" / TRACE_VIEW
    if not path.is_file() or not inside(path, root.resolve()):
        return None
    found: list[tuple[int, int, str, str]] = []
    tail = ""
    try:
        with confine.open_text(path) as handle:
            while chunk := handle.read(_CHUNK):
                tail = _scan(tail + chunk, False, found)
        _scan(tail, True, found)
    except OSError as exc:
        notes.append(f"{path}: not read for the affinity API rule ({exc.strerror})")
        return None
    return _timeline(unit, found)


_DB_SQL = """SELECT CAST(p.startNs AS INTEGER), CAST(p.endNs AS INTEGER) - CAST(p.startNs AS
INTEGER), s.value FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name WHERE substr(s.value, 1,
6) = 'aten::' OR substr(s.value, 1, 15) = 'Optimizer.step#'"""


def read_db(unit: str, path: Path) -> Timeline | None:
    """The same sequences from a db export's PYTORCH_API; None without the table."""
    rows = select(path, "PYTORCH_API", _DB_SQL)
    if rows is None:
        return None
    names = [(s, d, str(n), "") for s, d, n in rows if isinstance(s, int) and isinstance(d, int)]
    return _timeline(unit, names)


def _regex(pattern: str) -> re.Pattern[str]:
    """``softmax-(mul){0,1}-(add)`` -> ``(?:-softmax-)(?:-mul-){0,1}(?:-add-)`` over the joined
    sequence ``-op--op--op-``."""
    parts = []
    for part in pattern.split("-"):
        group = re.fullmatch(r"\(([\w.|]+)\)(.*)", part)
        names, suffix = (group[1], group[2]) if group else (part, "")
        alternatives = "|".join(f"-{re.escape(n.strip())}-" for n in names.split("|"))
        parts.append(f"(?:{alternatives}){suffix}")
    return re.compile("".join(parts))


_COMPILED = tuple(
    (sequence, replacement, pattern, _regex(pattern))
    for sequence, replacement, patterns in PATTERNS
    for pattern in patterns
)


@dataclass(frozen=True, slots=True)
class _Joined:
    """A sequence as ``-op--op-`` and where each op starts in it."""

    ranges: Sequence[Range]
    text: str
    starts: list[int]


def _joined(ranges: Sequence[Range]) -> _Joined:
    starts, at = [], 0
    for r in ranges:
        starts.append(at)
        at += len(r.name) + 2
    return _Joined(ranges, "".join(f"-{r.name}-" for r in ranges), starts)


def _matches(seq: _Joined, regex: re.Pattern[str]) -> list[tuple[int, str]]:
    """The host ns and the first op's code location of each non-overlapping match."""
    found = []
    for match in regex.finditer(seq.text):
        if match.end() == match.start():
            continue
        first = bisect_right(seq.starts, match.start()) - 1
        last = bisect_right(seq.starts, match.end() - 1)
        found.append((sum(r.dur_ns for r in seq.ranges[first:last]), seq.ranges[first].where))
    return found


def find(timelines: Sequence[Timeline]) -> tuple[Match, ...]:
    """Every pattern matched in some rank, most calls first."""
    joined = [{"aten": _joined(t.aten), "optimizer": _joined(t.optimizer)} for t in timelines]
    found = []
    for sequence, replacement, pattern, regex in _COMPILED:
        calls = host = ranks = 0
        where: dict[str, int] = {}
        for seqs in joined:
            hits = _matches(seqs[sequence], regex)
            calls, ranks = calls + len(hits), ranks + bool(hits)
            host += sum(ns for ns, _ in hits)
            for _, at in hits:
                if at:
                    where[at] = where.get(at, 0) + 1
        if calls:
            places = tuple(sorted(where.items(), key=lambda kv: (-kv[1], kv[0])))
            found.append(Match(sequence, replacement, pattern, calls, host, ranks, places))
    return tuple(sorted(found, key=lambda m: (-m.calls, m.replacement, m.pattern)))


def _where(m: Match) -> str:
    """Where the model code calls the sequence (its call stacks), or that the capture has none."""
    if not m.where:
        return " (no call stack in the capture: profile with with_stack=True to get its code line)"
    named = ", ".join(f"{at} {n} time(s)" for at, n in m.where[:PLACES_NAMED])
    more = len(m.where) - PLACES_NAMED
    return f", called from {named}" + (f" and {more} other place(s)" if more > 0 else "")


def judge(timelines: Sequence[Timeline], t: Thresholds) -> tuple[Bottleneck, ...]:
    """One affinity_api finding naming each replacement whose sequences ran at least
    affinity_api_min_calls times, with their host time; () without a host timeline."""
    named = [m for m in find(timelines) if m.calls >= t.affinity_api_min_calls]
    if not named:
        return ()
    items = [
        f"{ATEN if m.sequence == 'aten' else OPTIMIZER}{m.pattern} ran {m.calls} time(s) in "
        f"{m.ranks} of "
        f"{len(timelines)} rank(s), {m.host_ns / 1e6:.3f} ms of host time: {m.replacement}"
        + _where(m)
        for m in named
    ]
    replacements = list(dict.fromkeys(m.replacement for m in named))
    return (
        Bottleneck(
            "affinity_api",
            f"{len(replacements)} torch API(s) of the host timeline (trace_view.json or "
            f"PYTORCH_API) have an NPU-affine replacement (rule: msprof-analyze's affinity API "
            f"patterns, a pattern matched at least {t.affinity_api_min_calls} time(s)): "
            + "; ".join(items),
            ADVICE["affinity_api"] + " Here: use " + ", ".join(replacements) + ".",
            float(sum(m.calls for m in named)),
            float(t.affinity_api_min_calls),
        ),
    )
