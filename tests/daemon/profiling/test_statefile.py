"""A state file in any shape cannot hurt: the daemon starts, moves it aside, counts it and keeps
serving (and saving). Every shape here left the bad file in place before; the NaN/inf and
mistyped shapes were loaded and exported, the FIFO hung the start, /dev/zero ate memory."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from profiling_helpers import config_for, exposition, profiler_for, summary, value

from npumon.daemon.model.profile import AnalysisReport
from npumon.daemon.profiling.capture import CaptureOutcome
from npumon.daemon.profiling.state import STATE_FILE, ProfileState
from npumon.daemon.profiling.statefile import (
    FILE_ADAPTER,
    MAX_STATE_BYTES,
    move_aside,
    read_state,
    state_file_cap,
)
from tests.helpers.exposition import samples

GOOD = json.loads(
    (
        Path(__file__).resolve().parents[2] / "fixtures" / "state" / "profiling-state-v0.1.0.json"
    ).read_text()
)
QWEN: list[str | int] = ["workloads", "qwen3"]
SUMMARY: list[str | int] = [*QWEN, "summary"]


def changed(where: list[str | int], to: Any) -> bytes:
    """The 0.1.0 fixture with one value replaced (at any depth)."""
    data = json.loads(json.dumps(GOOD))
    node = data
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = to
    return json.dumps(data).encode()


def raw(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(text.encode())


def content(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


FIXTURE_TEXT = json.dumps(GOOD)
SHAPES: dict[str, Callable[[Path], None]] = {
    "empty": content(b""),
    "truncated": content(FIXTURE_TEXT.encode()[:700]),
    "binary garbage": content(bytes(range(256)) * 4),
    "not utf-8": content(FIXTURE_TEXT.replace("qwen3", "q\xe9").encode("latin-1")),
    "top level list": raw("[]"),
    "top level null": raw("null"),
    "top level string": raw('"profiling"'),
    "unknown version": content(changed(["version"], 2)),
    "version as string": content(changed(["version"], "1")),
    "workloads a list": content(changed(["workloads"], [])),
    "workload null": content(changed(QWEN, None)),
    "medians a string": content(changed([*QWEN, "medians"], "fast")),
    "median NaN": content(changed([*QWEN, "medians"], [float("nan"), 0.44])),
    "median Infinity": content(changed([*QWEN, "medians"], [float("inf"), 0.44])),
    "huge number overflows to inf": content(
        changed([*QWEN, "last_success"], 1e300).replace(b"1e+300", b"1e999")
    ),
    "number too long to parse": raw(
        FIXTURE_TEXT.replace('"capture_seconds": 3.25', '"capture_seconds": 1' + "0" * 5000)
    ),
    "timestamp as string": content(changed([*QWEN, "last_success"], "1764248400")),
    "count as bool": content(changed([*SUMMARY, "step", "count"], True)),
    "step time as string": content(changed([*SUMMARY, "step", "p99_seconds"], "0.8")),
    "ratio as string": content(changed([*SUMMARY, "op_time_ratio", 0, "ratio"], "0.27")),
    "phase name as number": content(changed([*SUMMARY, "phases", 0, "phase"], 7)),
    "rank phases a dict": content(changed([*SUMMARY, "ranks", 0, "phases"], {})),
    "bottleneck missing fields": content(changed([*SUMMARY, "bottlenecks", 0], {"kind": "x"})),
    "ingested mtime a string": content(changed(["ingested"], {"/data/prof/x": "yesterday"})),
    "deeply nested": raw("[" * 50_000 + "]" * 50_000),
    "directory instead of file": lambda path: (path.mkdir(), (path / "x").write_text("x")),
    "named pipe": lambda path: os.mkfifo(path),
    "symlink to /dev/zero": lambda path: path.symlink_to("/dev/zero"),
    "dangling symlink": lambda path: path.symlink_to(path.parent / "nowhere"),
}


@pytest.mark.parametrize("make", SHAPES.values(), ids=SHAPES.keys())
def test_a_bad_state_file_is_moved_aside_counted_and_the_daemon_serves(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    directory = tmp_path / "state" / "profiling"
    directory.mkdir(parents=True)
    make(directory / STATE_FILE)
    profiler, _ = profiler_for(config_for(tmp_path))  # start() loads the state
    text = exposition(profiler)
    assert (
        sum(v for (name, _), v in samples(text).items() if name == "npumon_state_errors_total") == 1
    )
    assert value(text, "npumon_scrape_collector_success", collector="profiles") == 1
    assert profiler.view().workloads == ()
    aside = list(directory.glob(f"{STATE_FILE}.corrupt-*"))
    assert len(aside) == 1 and not (directory / STATE_FILE).exists()
    # it keeps working: the next result is saved and a restart reads it back cleanly
    report = AnalysisReport(summary("w", 0.3), (), ())
    profiler._record(CaptureOutcome("w", "ok", "", report, 1.0, 5.0))
    again = ProfileState(directory)
    again.load()
    assert not again.errors and list(again.workloads) == ["w"]


def test_no_sample_is_ever_nan_or_inf_whatever_the_state(tmp_path: Path) -> None:
    directory = tmp_path / "state" / "profiling"
    directory.mkdir(parents=True)
    (directory / STATE_FILE).write_text(FIXTURE_TEXT.replace("0.8101503400000002}", "NaN}"))
    text = exposition(profiler_for(config_for(tmp_path))[0])
    assert all(math.isfinite(v) for v in samples(text).values())


def test_the_0_1_0_fixture_is_not_moved_aside(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_text(FIXTURE_TEXT)
    state = ProfileState(tmp_path)
    state.load()
    assert not state.errors and sorted(state.workloads) == ["qwen3", "resnet"]
    assert [p.name for p in tmp_path.iterdir()] == [STATE_FILE]


def test_moved_aside_files_are_named_by_time_and_only_the_newest_kept(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    for second in range(5):
        path.write_text(f"bad {second}")
        moved = move_aside(path, 1_700_000_000.0 + second, keep=3)
        assert moved is not None and moved.read_text() == f"bad {second}"
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == [f"{STATE_FILE}.corrupt-20231114T22132{s}000000Z" for s in (2, 3, 4)]


def test_the_log_names_the_problem_not_the_content(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / STATE_FILE).write_bytes(changed([*QWEN, "last_success"], "secret-token-42"))
    ProfileState(tmp_path).load()
    assert "workloads.qwen3.last_success" in caplog.text
    assert "secret-token-42" not in caplog.text


def test_an_oversized_state_file_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    with path.open("wb") as handle:
        handle.truncate(10 << 20)  # sparse: costs no disk
    with pytest.raises(Exception, match="over the 1048576 byte cap"):
        read_state(path, max_bytes=1 << 20)


def _valid_state(workloads: int, medians: int, ranks: int = 4, ops: int = 11) -> bytes:
    """The fixture's workload under ``workloads`` names, each with ``medians`` medians and its
    ranks and operators repeated to ``ranks`` and ``ops`` entries: a file that validates."""
    data = json.loads(FIXTURE_TEXT)
    one = data["workloads"]["qwen3"]
    one["medians"] = [0.41 + i * 1e-9 for i in range(medians)]
    summary = one["summary"]
    for key, count in (("ranks", ranks), ("op_time_ratio", ops)):
        summary[key] = [
            {**summary[key][i % len(summary[key])], **({"rank": str(i)} if key == "ranks" else {})}
            for i in range(count)
        ]
    data["workloads"] = {f"job-{i:04}": one for i in range(workloads)}
    return json.dumps(data).encode()


def test_a_valid_state_file_bigger_than_the_settings_can_write_is_refused_unread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 60 MB file that validates cost 458 MB of RSS to load; the default settings (16
    # workloads, a window of 20) write well under their cap, so a bigger file is not theirs
    cap = state_file_cap(16, 20)
    per_workload = len(_valid_state(2, 21)) - len(_valid_state(1, 21))
    data = _valid_state(cap // per_workload + 1, 21)
    assert FILE_ADAPTER.validate_json(data) and len(data) > cap
    (tmp_path / STATE_FILE).write_bytes(data)
    validated: list[int] = []
    real = FILE_ADAPTER.validate_json
    monkeypatch.setattr(FILE_ADAPTER, "validate_json", lambda d: validated.append(1) or real(d))
    state = ProfileState(tmp_path, window=20, max_workloads=16)
    state.load()
    assert validated == [], "the file was parsed"
    assert state.workloads == {} and state.errors == {"corrupt": 1}
    assert f"over the {cap} byte cap for profiling.max_workloads" in caplog.text
    assert not (tmp_path / STATE_FILE).exists()  # moved aside


def test_the_largest_state_the_settings_can_write_loads() -> None:
    # the largest settings: 256 workloads, a window of 1,000 medians (+1), top_n 100, 64 ranks
    data = _valid_state(256, 1001, ranks=64, ops=100)
    assert len(data) <= MAX_STATE_BYTES == state_file_cap(256, 1000)
    assert len(_valid_state(16, 21, ranks=64, ops=100)) <= state_file_cap(16, 20)


def test_an_unreadable_state_file_is_counted_and_moved_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / STATE_FILE
    path.write_text(FIXTURE_TEXT)
    real_open = Path.open

    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == path:
            raise PermissionError(13, "Permission denied")  # root reads a 000 file anyway
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    state = ProfileState(tmp_path)
    state.load()
    assert state.errors == {"unreadable": 1} and state.workloads == {}
    assert len(list(tmp_path.glob(f"{STATE_FILE}.corrupt-*"))) == 1
