"""torch_npu dynamic_profile trigger: write the job's profiler_config.json, wait for its output."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from npumon.daemon.profiling.captureerror import CaptureError
from npumon.daemon.profiling.state import atomic_write

CONFIG_FILE = "profiler_config.json"
_TABLES = ("kernel_details.csv", "op_statistic.csv", "step_trace_time.csv")
POLL_SECONDS = 0.2


def trigger_config(prof_dir: Path, steps: int, *, valid: bool = True) -> dict[str, Any]:
    """The keys torch_npu's _DynamicProfilerConfigContext reads (absolute prof_dir: a relative
    one resolves against the training script, not the json)."""
    return {
        "activities": ["CPU", "NPU"],
        "prof_dir": str(prof_dir),
        "analyse": True,
        "record_shapes": False,
        "profile_memory": False,
        "with_stack": False,
        "with_flops": False,
        "with_modules": False,
        "active": steps,
        "warmup": 0,
        "start_step": 0,
        "is_rank": False,
        "rank_list": [],
        "experimental_config": {
            "profiler_level": "Level1",
            "aic_metrics": "AiCoreNone",
            "l2_cache": False,
            "op_attr": False,
            "data_simplification": True,
            "record_op_args": False,
            "export_type": ["text"],
            "msprof_tx": False,
        },
        "is_valid": valid,
    }


def _pending_trigger(original: bytes | None) -> bool:
    """Someone else's valid config is waiting to be consumed: their capture, not ours."""
    if not original:
        return False
    try:
        data = json.loads(original)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("is_valid") is True


def _finished(out_dir: Path, before: set[str]) -> Path | None:
    for run in sorted(out_dir.glob("*_ascend_pt")):
        tables = run / "ASCEND_PROFILER_OUTPUT"
        if run.name not in before and any((tables / name).is_file() for name in _TABLES):
            return run
    return None


def _signature(run: Path) -> tuple[tuple[str, int, int], ...]:
    return tuple(
        sorted(
            (str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in run.rglob("*") if p.is_file()
        )
    )


def torch_config_capture(
    config_dir: Path,
    out_dir: Path,
    pids: Sequence[int],
    *,
    steps: int,
    timeout: float,
    wait: Callable[[float], None],
    alive: Callable[[int], bool],
    monotonic: Callable[[], float] = time.monotonic,
) -> Path:
    """The new ``*_ascend_pt`` directory; the job's config is restored (or invalidated) after."""
    config = config_dir / CONFIG_FILE
    try:
        original: bytes | None = config.read_bytes()
    except FileNotFoundError:
        original = None
    except OSError as error:
        raise CaptureError("failed", f"cannot read {config}: {error}") from None
    if _pending_trigger(original):
        raise CaptureError("skipped_busy", f"{config} already holds a valid trigger")
    out_dir.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in out_dir.glob("*_ascend_pt")}
    try:
        atomic_write(config, json.dumps(trigger_config(out_dir, steps), indent=2).encode())
        return _wait_output(out_dir, before, pids, timeout, wait, alive, monotonic)
    except OSError as error:
        raise CaptureError("failed", f"cannot write {config}: {error}") from None
    finally:
        restored = original or json.dumps(trigger_config(out_dir, steps, valid=False)).encode()
        # a failure here shows up as a pending trigger (skipped_busy) on the next attempt
        with contextlib.suppress(OSError):
            atomic_write(config, restored)


def _wait_output(
    out_dir: Path,
    before: set[str],
    pids: Sequence[int],
    timeout: float,
    wait: Callable[[float], None],
    alive: Callable[[int], bool],
    monotonic: Callable[[], float],
) -> Path:
    deadline = monotonic() + timeout
    last: tuple[tuple[str, int, int], ...] | None = None
    while monotonic() < deadline:
        run = _finished(out_dir, before)
        if run is not None:
            signature = _signature(run)
            if signature == last:  # unchanged over one poll: the job finished writing
                return run
            last = signature
        elif not all(alive(p) for p in pids):
            raise CaptureError("target_exited", "the job ended before writing its profile")
        wait(POLL_SECONDS)
    raise CaptureError("timeout", f"no *_ascend_pt output in {out_dir} within {timeout:g}s")
