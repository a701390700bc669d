"""The capture's inflation from the job's own training log (daemon/profiling/steplog.py)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from npumon.daemon.profiling import steplog
from npumon.daemon.profiling.steplog import MIN_LINES, LogStep, cri_time

FIXTURES = Path(__file__).parents[2] / "fixtures" / "steplog"
MEGATRON = FIXTURES / "megatron-cri.log"
# the capture window of megatron-cri.log (SOURCES.md): iterations 42-66 lie inside it
START = cri_time("2026-05-04T10:01:34.126Z")
END = cri_time("2026-05-04T10:02:31.346Z")


def window() -> tuple[float, float]:
    assert START is not None and END is not None
    return START, END


def test_the_megatron_log_gives_the_captures_ten_percent() -> None:
    lines = steplog.parse(MEGATRON.read_bytes(), whole=True)
    assert [s.iteration for s in lines.steps] == list(range(1, 91))  # line 30 joined from P+F
    assert lines.skipped == {"not_cri": 1}
    found = steplog.compare([lines], *window())
    assert found.result == "ok"
    assert found.captured_lines == 25  # 42-66; 41 and 67 straddle an edge
    assert found.uncaptured_lines == 39 + 23  # 2-40 and 68-90; 1 has no span
    assert dict(found.skipped) == {"edge": 2, "no_previous": 1, "not_cri": 1}
    assert found.ratio == pytest.approx(1.10, abs=0.01)


def test_the_previous_capture_bounds_the_uncaptured_lines() -> None:
    lines = steplog.parse(MEGATRON.read_bytes(), whole=True)
    start, end = window()
    since = lines.steps[35].at  # iteration 36's line: 2-36 began before it
    found = steplog.compare([lines], start, end, since)
    assert found.uncaptured_lines == 4 + 23
    assert dict(found.skipped)["previous_capture"] == 35


def test_mindspeed_llm_lines_parse() -> None:
    text = FIXTURES.joinpath("mindspeed-llm-fsdp2.txt").read_text()
    log = "".join(
        f"2026-06-22T11:28:4{i}.000000001Z stdout F {line}\n"
        for i, line in enumerate(text.splitlines())
    )
    steps = steplog.parse(log.encode(), whole=True).steps
    assert [(s.iteration, s.seconds) for s in steps] == [
        (1, pytest.approx(10.5206)),
        (2, pytest.approx(1.8799)),
        (3, pytest.approx(1.76999)),
    ]
    trainer = "iteration: 7 | consumed samples: 56 | elapsed time per iteration (ms): 981.1 | "
    one = steplog.parse(f"2026-06-22T11:28:40Z stdout F {trainer}\n".encode(), whole=True)
    assert [(s.iteration, s.seconds) for s in one.steps] == [(7, pytest.approx(0.9811))]


def test_cri_times() -> None:
    utc = datetime(2016, 10, 6, 0, 17, 9, 669794, tzinfo=UTC).timestamp()
    assert cri_time("2016-10-06T00:17:09.669794202Z") == utc  # to the microsecond
    assert cri_time("2016-10-06T08:17:09.669794202+08:00") == utc
    for bad in ("", "stdout", "2016-10-06T00:17:09", "2016-13-06T00:17:09Z", "+2016"):
        assert cri_time(bad) is None


def _cri(at: str, message: str, tag: str = "F") -> bytes:
    return f"{at} stdout {tag} {message}\n".encode()


ITERATION = " iteration {:8d}/{:8d} | elapsed time per iteration (ms): {} |"


def test_bad_input_is_left_out_and_counted() -> None:
    data = b"".join(
        (
            b"ut F half a line cut by the tail read\n",
            _cri("2026-05-04T10:00:00Z", ITERATION.format(1, 10, "1000.0")),
            _cri("2026-05-04T10:00:01Z", ITERATION.format(2, 10, "nan")),
            _cri("2026-05-04T10:00:02Z", ITERATION.format(3, 10, "1000.0"), tag="P"),  # unended
            b"\xff\xfe not text at all\n",
            b"2026-05-04T10:00:03Z stdlog F not a stream\n",
            b"2026-05-04T10:00:04Z stdout X not a tag\n",
            _cri("2026-05-04T10:00:05Z", ITERATION.format(4, 10, "1000.0"))[:-9],  # unterminated
        )
    )
    lines = steplog.parse(data, whole=False)
    assert [s.iteration for s in lines.steps] == [1]
    assert lines.skipped == {
        "cut": 1,
        "bad_value": 1,
        "not_cri": 3,
        "partial": 1,
        "unterminated": 1,
    }
    assert steplog.compare([lines], 0.0, 1.0).result == "too_few_captured"
    assert steplog.parse(b"", whole=True).steps == []
    assert steplog.compare([steplog.parse(b"\n\n garbage", whole=True)], 0, 1).result == "no_steps"


def _steps(first: int, at: float, seconds: list[float]) -> steplog.Lines:
    lines = steplog.Lines()
    for i, s in enumerate(seconds):
        at += s
        lines.steps.append(LogStep(at, first + i, s))
    return lines


def test_no_ratio_without_min_lines_each_side() -> None:
    # a line every second: MIN_LINES + 1 before (the first has no span), then the window
    before = _steps(1, 0.0, [1.0] * (MIN_LINES + 1))
    start = before.steps[-1].at
    inside = [1.2] * MIN_LINES
    lines = _steps(1, 0.0, [1.0] * (MIN_LINES + 1) + inside)
    assert steplog.compare([lines], start, start + sum(inside)).ratio == pytest.approx(1.2)
    short = steplog.compare([lines], start, start + sum(inside[:-1]))
    assert short.result == "too_few_captured" and short.ratio is None
    few = _steps(1, 0.0, [1.0] * MIN_LINES + inside)  # one line fewer before
    too_late = steplog.compare([few], start - 1.0, start - 1.0 + sum(inside))
    assert too_late.result == "too_few_uncaptured" and too_late.ratio is None
    assert too_late.said()["ratio"] is None and too_late.said()["min_lines"] == MIN_LINES


def test_a_restarted_run_starts_over() -> None:
    first = _steps(1, 0.0, [1.0] * 4)
    again = _steps(1, first.steps[-1].at, [1.0] * 4)  # iteration 1 again: a new run
    lines = steplog.Lines(first.steps + again.steps)
    found = steplog.compare([lines], 100.0, 200.0)
    assert found.uncaptured_lines == 6 and dict(found.skipped) == {"no_previous": 1, "restart": 1}


def _pod_log(root: Path, uid: str = "0d1f2e3a-aaaa-bbbb-cccc-123456789abc") -> Path:
    directory = root / f"train_llama-0_{uid}" / "trainer"
    directory.mkdir(parents=True)
    (directory / "0.log").write_bytes(b"old run\n")
    (directory / "1.log.20260504-100000").write_bytes(b"rotated\n")
    current = directory / "1.log"
    current.write_bytes(MEGATRON.read_bytes())
    return current


def test_measure_reads_the_pods_current_log(tmp_path: Path) -> None:
    _pod_log(tmp_path)
    pods = [("train", "llama-0", None, "trainer")]
    found = steplog.measure(tmp_path, pods, 1 << 20, *window(), None)
    assert found.result == "ok" and found.ratio == pytest.approx(1.10, abs=0.01)
    # a tail that starts mid-file: the cut line is left out, the rest still measures
    tail = steplog.measure(tmp_path, pods, 24 * 1024, *window(), None)
    assert tail.result == "ok" and dict(tail.skipped)["cut"] == 1
    assert tail.uncaptured_lines < found.uncaptured_lines
    assert steplog.measure(tmp_path, [], 4096, 0, 1, None).result == "no_pod"
    other = [("train", "other", None, None)]
    assert steplog.measure(tmp_path, other, 4096, 0, 1, None).result == "no_log"


def test_a_linked_log_is_refused(tmp_path: Path) -> None:
    current = _pod_log(tmp_path)
    secret = tmp_path / "secret"
    secret.write_bytes(b"root only\n")
    current.unlink()
    current.symlink_to(secret)
    pods = [("train", "llama-0", None, "trainer")]
    assert steplog.measure(tmp_path, pods, 4096, 0, 1, None).result == "refused"
    container = current.parent
    os.rename(container, tmp_path / "elsewhere")
    container.symlink_to(tmp_path / "elsewhere")  # the folder a link
    assert steplog.measure(tmp_path, pods, 4096, 0, 1, None).result == "refused"


def test_two_pods_of_one_name_need_the_uid(tmp_path: Path) -> None:
    _pod_log(tmp_path, "uid-one")
    _pod_log(tmp_path, "uid-two")
    unknown = [("train", "llama-0", None, "trainer")]
    assert steplog.measure(tmp_path, unknown, 1 << 20, *window(), None).result == "ambiguous"
    known = [("train", "llama-0", "uid-two", "trainer")]
    assert steplog.measure(tmp_path, known, 1 << 20, *window(), None).result == "ok"
