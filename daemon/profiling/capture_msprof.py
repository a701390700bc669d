"""msprof attach (`--dynamic=on --pid=...` driven through its prompt) and `--export=on`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from npumon.daemon.model.profile import StepStats, Thresholds
from npumon.daemon.profiling.captureerror import CaptureError
from npumon.daemon.profiling.children import Children
from npumon.daemon.profiling.prompt import Prompt, PromptExited, PromptTimeout
from npumon.daemon.runner import CommandResult, resolve_command, run_command

log = logging.getLogger(__name__)

PROMPT = "(msprof)"
# msprof's own words when the job was not started with PROFILING_MODE=dynamic
NOT_ATTACHABLE_HINT = "PROFILING_MODE=dynamic"
EXIT_TARGET_GONE = 2

Runner = Callable[[Sequence[str], float], CommandResult]
EDGE_STEPS = 2  # a capture's first and last steps are usually partial and left out
PACE_MARGIN = 1.25  # room for a job whose steps vary, or run slower than the previous capture's
PROBE_GROWTH = 4  # no step seen: the next capture is this many times longer


def attach_duration(
    step: StepStats | None,
    previous: float | None,
    first: float,
    longest: float,
    t: Thresholds,
) -> float:
    """Seconds between `start` and `stop` for a capture of ``regression_min_steps`` steps at
    the pace of the previous capture (``step``, after ``previous`` seconds), within
    [``first``, ``longest``]. The first capture (nothing known) lasts ``first``; one that saw
    no whole step (steps longer than it) is followed by one ``PROBE_GROWTH`` times longer."""
    if step is not None and step.count > 0 and step.p50_seconds > 0:
        wanted = step.p50_seconds * (t.regression_min_steps + EDGE_STEPS) * PACE_MARGIN
    elif previous is not None:
        wanted = previous * PROBE_GROWTH
    else:
        wanted = first
    return min(max(wanted, first), longest)


def _classify(
    phase: str, exited: PromptExited, pids: Sequence[int], alive: Callable[[int], bool]
) -> CaptureError:
    if NOT_ATTACHABLE_HINT in exited.output:
        return CaptureError(
            "skipped_not_attachable",
            f"msprof cannot attach to pid {','.join(map(str, pids))}: the job was not started "
            "with PROFILING_MODE=dynamic (set it in the job's environment, or use mode "
            "torch_npu_config or ingest for this target)",
        )
    if exited.exit_code == EXIT_TARGET_GONE or not all(alive(p) for p in pids):
        return CaptureError("target_exited", f"the job ended during {phase}: {exited}")
    return CaptureError("failed", f"msprof {phase}: {exited}")


def msprof_attach(
    command: Sequence[str],
    pids: Sequence[int],
    out_dir: Path,
    *,
    duration: float,
    start_timeout: float,
    stop_timeout: float,
    wait: Callable[[float], None],
    alive: Callable[[int], bool],
    clock: Callable[[], float],
    children: Children | None = None,
) -> tuple[float, float]:
    """start / wait / stop / quit at the prompt; raises CaptureError with the capture result.
    Returns the interval the job was profiled (``clock`` when msprof acknowledged `start`, and
    when `stop` was sent).

    Whatever happens, msprof's process group is gone when this returns.
    """
    argv = [
        *resolve_command(command),
        "--dynamic=on",
        f"--pid={','.join(map(str, pids))}",
        f"--output={out_dir}",
    ]
    phase = "start"
    prompt = Prompt(argv, children=children)
    try:
        prompt.expect(PROMPT, start_timeout)
        prompt.send("start")
        prompt.expect(PROMPT, start_timeout)
        profiled_from = clock()
        wait(duration)
        if children is not None and children.stopped.is_set():
            raise CaptureError("failed", "npumon is stopping; capture abandoned")
        if not all(alive(p) for p in pids):
            raise CaptureError("target_exited", "the job ended while being profiled")
        phase = "stop"
        profiled_to = clock()
        prompt.send("stop")
        prompt.expect(PROMPT, stop_timeout)
        prompt.send("quit")
        code = prompt.wait_exit(stop_timeout)
        if code != 0:
            raise _classify(phase, PromptExited(code, prompt.output), pids, alive)
        return profiled_from, profiled_to
    except PromptTimeout as error:
        raise CaptureError("timeout", f"msprof {phase}: {error}; process group killed") from None
    except PromptExited as exited:
        raise _classify(phase, exited, pids, alive) from None
    finally:
        prompt.close()


def needs_export(prof_dir: Path) -> bool:
    """Raw CANN data with no exported tables yet (torch_npu output is exported by the job)."""
    return not (prof_dir / "mindstudio_profiler_output").is_dir() and not any(
        prof_dir.glob("device_*/summary")
    )


def export(
    command: Sequence[str], prof_dir: Path, timeout: float, runner: Runner = run_command
) -> None:
    """`msprof --export=on --output=PROF_...`; CaptureError on timeout or a failed exit."""
    result = runner([*resolve_command(command), "--export=on", f"--output={prof_dir}"], timeout)
    if result.timed_out:
        raise CaptureError("timeout", f"msprof export of {prof_dir.name} took over {timeout:g}s")
    if result.cancelled:
        raise CaptureError(
            "failed", f"msprof export of {prof_dir.name} stopped: npumon is stopping"
        )
    if result.exit_code != 0:
        tail = ((result.stderr or result.stdout).strip().splitlines() or [""])[-1][:300]
        raise CaptureError(
            "failed", f"msprof export of {prof_dir.name}: exit {result.exit_code}: {tail}"
        )


def export_pending(
    command: Sequence[str], root: Path, timeout: float, runner: Runner = run_command
) -> None:
    """Export every PROF_* directly under ``root`` that has no exported tables yet."""
    for prof in sorted(root.glob("PROF_*")):
        if needs_export(prof):
            export(command, prof, timeout, runner)
