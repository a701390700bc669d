"""Host time the device tables do not show: the data loader and on-line operator compilation.

Both sit in torch_npu's Preparing (the time from a step's start to its first device task) or
keep the device waiting inside the step, so they tell what Preparing holds:

- the data loader: trace_view.json's ``enumerate(DataLoader)#<iterator>.__next__`` events, the
  span torch's profiler records around each batch fetch (every profiler level). The fields of
  an event precede its ``args`` (torch_npu writes ph, name, pid, tid, ts, dur, cat, args), so
  the file is scanned for the name in chunks and never parsed whole (it can be gigabytes).
- on-line compilation: api_statistic.csv's ``aclopCompileAndExecute`` row (CANN API statistics,
  Level1 and up; msprof writes ``api_statistic_<ts>.csv``), its call count and total time. The
  msprof-analyze counts the same API's events in the timeline; so does npumon where
  there is no API statistic (torch_npu exports without api_statistic.csv): trace_view.json's
  ``AscendCL@aclopCompileAndExecute`` events (``aclopCompileAndExecute`` in older exports),
  scanned in the same pass as the data loader's. A trace with none of them says nothing
  (Level0 records no CANN API), so it gives no figure rather than zero.

db exports hold the same figures in PYTORCH_API and CANN_API (sqlite_host.py): ``read_db``.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from npumon.daemon.analysis.evidence import HostShare
from npumon.daemon.analysis.readers import confine, sqlite_host
from npumon.daemon.analysis.readers.layout import TRACE_VIEW, inside

API_STATISTIC = "api_statistic.csv"
DATA_LOADER_EVENT = '"enumerate(DataLoader)#'  # the event name, opening quote included
COMPILE_API = "aclopCompileAndExecute"
_EVENTS = re.compile(
    r'(?P<loader>"enumerate\(DataLoader\)#)'
    rf'|(?P<compile>"name":\s*"(?:AscendCL@)?{COMPILE_API}")'
)
_NEEDLE_MAX = 64  # a match is at most this long: one that may run past a chunk waits for the next
_DUR = re.compile(r'"dur":\s*"?([0-9][0-9.eE+-]*)')
_CHUNK = 8 << 20
_EVENT_FIELDS_MAX = 4096  # name to args of one event: a window that holds ts and dur


@dataclass(frozen=True, slots=True)
class HostTimes:
    """One rank's host figures over its whole capture; None where the profile does not say."""

    data_loader_us: float | None = None
    data_loader_calls: int | None = None
    compile_us: float | None = None  # aclopCompileAndExecute
    compile_calls: int | None = None


def read(root: Path, notes: list[str]) -> HostTimes | None:
    """A unit's host figures from the files under ``root`` that hold them; None when none do."""
    resolved = root.resolve()
    torch_dir = root / "ASCEND_PROFILER_OUTPUT"
    trace = torch_dir / TRACE_VIEW
    statistic = [torch_dir / API_STATISTIC] + sorted(
        (root / "mindstudio_profiler_output").glob("api_statistic_*.csv")
    )[-1:]
    events = _trace_events(trace, notes) if trace.is_file() and inside(trace, resolved) else None
    loader = None if events is None else events["loader"]
    found = [p for p in statistic if p.is_file() and inside(p, resolved)]
    compile_ = _compile(found[0], notes) if found else None
    if compile_ is None and events is not None and events["compile"][1] > 0:
        compile_ = events["compile"]
    if loader is None and compile_ is None:
        return None
    return HostTimes(
        data_loader_us=None if loader is None else loader[0],
        data_loader_calls=None if loader is None else loader[1],
        compile_us=None if compile_ is None else compile_[0],
        compile_calls=None if compile_ is None else compile_[1],
    )


def read_db(path: Path) -> HostTimes | None:
    """The same figures from an export_type=db profiler db; None when it has neither table."""
    loader, compile_ = sqlite_host.dataloader_time(path), sqlite_host.compile_calls(path)
    if loader is None and compile_ is None:
        return None
    return HostTimes(
        data_loader_us=None if loader is None else loader.seconds * 1e6,
        data_loader_calls=None if loader is None else loader.count,
        compile_us=None if compile_ is None else compile_.seconds * 1e6,
        compile_calls=None if compile_ is None else compile_.count,
    )


def _trace_events(path: Path, notes: list[str]) -> dict[str, tuple[float, int]] | None:
    """(total us, calls) of the data loader's and the on-line compilation's events, from one
    pass over the trace in chunks; (0, 0) for a kind the trace has none of."""
    found = {"loader": (0.0, 0), "compile": (0.0, 0)}
    tail = ""
    try:
        with confine.open_text(path) as handle:
            while True:
                chunk = handle.read(_CHUNK)
                text, last = tail + chunk, not chunk
                keep = len(text) if last else max(0, len(text) - _NEEDLE_MAX)
                for match in _EVENTS.finditer(text):
                    if match.start() >= keep:
                        break  # may be cut short: found again with the next chunk
                    window = _fields(text, match.start())
                    if window is None and not last:  # the event runs past this chunk
                        keep = match.start()
                        break
                    dur = _DUR.search(text[match.start() :] if window is None else window)
                    if dur:
                        kind = match.lastgroup or ""
                        total, calls = found[kind]
                        found[kind] = (total + float(dur[1]), calls + 1)
                if last:
                    return found
                tail = text[keep:]
    except (OSError, ValueError) as exc:
        notes.append(f"{path}: not read for the data loader's time ({type(exc).__name__})")
        return None


def _fields(text: str, at: int) -> str | None:
    """The event's text from its name to its ``args`` (or its end); None if not all in text."""
    ends = [i for i in (text.find('"args"', at), text.find("}", at)) if i >= 0]
    if not ends:
        return None if len(text) - at < _EVENT_FIELDS_MAX else text[at : at + _EVENT_FIELDS_MAX]
    return text[at : min(ends)]


def _compile(path: Path, notes: list[str]) -> tuple[float, int] | None:
    """(total us, calls) of aclopCompileAndExecute; (0, 0) when the API was never called."""
    try:
        with confine.open_text(path, newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, csv.Error) as exc:
        notes.append(f"{path}: not read for on-line compilation ({type(exc).__name__})")
        return None
    if rows and not {"API Name", "Time(us)", "Count"} <= set(rows[0]):
        notes.append(
            f"{path}: no API Name, Time(us) and Count columns; on-line compilation not read"
        )
        return None
    total, calls = 0.0, 0
    for row in rows:
        if (row.get("API Name") or "").strip() == COMPILE_API:
            try:
                total += float((row.get("Time(us)") or "").strip())
                calls += int(float((row.get("Count") or "").strip()))
            except ValueError:
                notes.append(f"{path}: the {COMPILE_API} row has no number; not read")
                return None
    return total, calls


def share(times: list[tuple[HostTimes, int, float]]) -> HostShare | None:
    """Per step and over step time, from (figures, steps, step time us) of each rank."""
    if not times:
        return None

    def summed(pick: str) -> tuple[float, int, float] | None:
        known = [(getattr(h, pick), n, us) for h, n, us in times if getattr(h, pick) is not None]
        if not known:
            return None
        return (
            sum(v for v, _, _ in known),
            sum(n for _, n, _ in known),
            sum(us for _, _, us in known),
        )

    loader, compile_ = summed("data_loader_us"), summed("compile_us")
    calls = [(h.compile_calls, n) for h, n, _ in times if h.compile_calls is not None]
    return HostShare(
        steps=sum(n for _, n, _ in times),
        data_loader_ms=None if loader is None else loader[0] / loader[1] / 1e3,
        data_loader_ratio=None if loader is None else loader[0] / loader[2],
        compile_calls=max(c for c, _ in calls) if calls else None,
        compile_per_step=sum(c for c, _ in calls) / sum(n for _, n in calls) if calls else None,
        compile_ms=None if compile_ is None else compile_[0] / compile_[1] / 1e3,
        compile_ratio=None if compile_ is None else compile_[0] / compile_[2],
    )
