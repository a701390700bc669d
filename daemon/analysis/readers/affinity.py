"""The host timeline of one rank, for msprof-analyze's affinity API rule
(rules/affinity_api.py): its aten and optimizer call sequences, with where the model code made
each call.

The host timeline is trace_view.json's CPU ranges (torch_npu writes ph, name, pid, tid, ts, dur,
cat, args; ts a string of us) or a db export's PYTORCH_API (startNs, endNs, name in STRING_IDS).
Two sequences are read, as msprof-analyze reads them (advisor/analyzer/schedule/fusion_ops):

- aten: the ``aten::*`` ranges by start time, each range nested in the one before it left out
  (the first level of the dispatcher), ``aten::`` stripped: ``permute, contiguous, view, ...``;
- optimizer: the ``Optimizer.step#<class>.step`` ranges, ``Optimizer.step#`` stripped.

A pattern is ops joined by ``-``; ``(a|b)`` with a regex count suffix (``{0,1}``, ``*``) is optional
or repeated. ``PATTERNS`` (rules/affinity_api.py) is msprof-analyze's rules/timeline_fusion_ops.yaml
at its default versions (CANN 8.0.0, torch 2.1.0: rule sets 0-3; the MindSpeed rules are for 8.0.RC3
only). The file is scanned in chunks and never parsed whole, as host.py scans it.

Where the capture has call stacks (``with_stack=True``: the ``Call stack`` arg of each range,
``file(line): function`` frames innermost first, or ``\r\n``-separated), each match is placed at
its first op's first frame outside the Python installation, the model code's line; msprof-analyze
prints the whole stacks with their counts."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path

from npumon.daemon.analysis.evidence import ATEN, OPTIMIZER, Range, Timeline
from npumon.daemon.analysis.readers import confine
from npumon.daemon.analysis.readers.layout import TRACE_VIEW, inside
from npumon.daemon.analysis.readers.sqlite_tables import select

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
