"""Parse one big CSV in byte ranges on several cores, and join frames keeping categories.

A 1,000,000-row kernel_details is ~350 MB; pandas' C tokenizer reads ~150 MB/s on one core,
so splitting at line boundaries is what keeps the analysis inside its 3 s budget. Profiler
CSVs never hold a newline inside a quoted field (shapes hold ``;`` and TABs), which makes
splitting at a newline safe.
"""

from __future__ import annotations

import io
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from npumon.daemon.analysis.readers import confine

if TYPE_CHECKING:
    import pandas as pd

PARALLEL_MIN_BYTES = 32 * 1024 * 1024
MAX_WORKERS = 4


@dataclass(frozen=True, slots=True)
class CsvSpec:
    """What to read: the header (names for ranges after the first), columns and dtypes."""

    header: tuple[str, ...]
    usecols: tuple[str, ...]
    dtypes: dict[str, str]
    na_values: tuple[str, ...]


class _Range(io.RawIOBase):
    """Bytes [start, end) of an open file as a readable stream (pread: the descriptor's offset
    is shared with the other ranges)."""

    def __init__(self, fd: int, start: int, end: int) -> None:
        super().__init__()
        self._fd, self._at, self._end = fd, start, end

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        data = os.pread(self._fd, min(len(view), self._end - self._at), self._at)
        view[: len(data)] = data
        self._at += len(data)
        return len(data)


def _read_range(fd: int, start: int, end: int, spec: CsvSpec) -> pd.DataFrame:
    import pandas as pd

    with io.BufferedReader(_Range(fd, start, end), 1 << 20) as stream:
        return pd.read_csv(
            stream,
            header=None,
            names=list(spec.header),
            usecols=list(spec.usecols),
            dtype=spec.dtypes,
            na_values=list(spec.na_values),
            keep_default_na=False,
            on_bad_lines="skip",
            engine="c",
        )


def _boundaries(handle: IO[bytes], start: int, size: int, parts: int) -> list[int]:
    """Cut points just after a newline, so each range holds whole lines."""
    cuts = [start]
    for index in range(1, parts):
        handle.seek(start + (size - start) * index // parts)
        handle.readline()
        cuts.append(max(handle.tell(), cuts[-1]))
    cuts.append(size)
    return cuts


def read_csv_ranges(
    path: Path, data_start: int, spec: CsvSpec, max_bytes: int | None = None
) -> pd.DataFrame:
    """The data rows after byte ``data_start``, parsed in parallel when the file is big; with
    ``max_bytes``, only the whole lines of the first ``max_bytes`` (a head of the table).
    The file is opened once (confine.py) and every range read from that descriptor."""
    with confine.open_binary(path) as handle:
        return _read_ranges(handle, data_start, spec, max_bytes)


def _read_ranges(
    handle: IO[bytes], data_start: int, spec: CsvSpec, max_bytes: int | None
) -> pd.DataFrame:
    size = os.fstat(handle.fileno()).st_size
    if max_bytes is not None and size - data_start > max_bytes:
        handle.seek(data_start + max_bytes - 1)  # end after the line in which the cap falls
        handle.readline()
        size = handle.tell()
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if size - data_start < PARALLEL_MIN_BYTES or workers < 2:
        return _read_range(handle.fileno(), data_start, size, spec)
    cuts = _boundaries(handle, data_start, size, workers)
    ranges = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    # fork: the children inherit the imported pandas and the descriptor; the analysis process
    # is single-threaded
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(len(ranges), mp_context=context) as pool:
        futures = [pool.submit(_read_range, handle.fileno(), a, b, spec) for a, b in ranges]
        return concat_frames([f.result() for f in futures])


def concat_frames(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Row-wise concat; categorical columns get the union of categories (stays cheap)."""
    import pandas as pd
    from pandas.api.types import union_categoricals

    if len(frames) == 1:
        return frames[0]
    columns = {}
    for name in frames[0].columns:
        parts = [f[name] for f in frames]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts):
            columns[name] = pd.Series(union_categoricals(parts, ignore_order=True))
        else:
            columns[name] = pd.concat(parts, ignore_index=True)
    return pd.DataFrame(columns)
