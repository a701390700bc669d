"""Simulated msprof PROF_* directories: the raw capture (`stop`) and its CANN 8 export."""

from __future__ import annotations

import json
import random
import shutil
import string
from dataclasses import asdict, dataclass
from pathlib import Path

from npumon.simulator import tables
from npumon.simulator.profiles import KINDS, PROFILES, simulate

META_NAME = "npumon_sim_capture.json"  # host/data/: what export needs to write matching tables
EXPORT_DIR = "mindstudio_profiler_output"
_MIB = 1 << 20


class IncompleteProf(Exception):
    """A PROF_* directory whose raw data cannot be exported."""


@dataclass(frozen=True, slots=True)
class CaptureMeta:
    """What the simulated collector recorded: the target's workload and the captured window."""

    kind: str
    pid: int
    device_id: int
    step_seconds: float
    start_seconds: float
    stop_seconds: float
    first_step: int
    steps: int
    seed: int


def _atomic_dir(final: Path) -> Path:
    """A hidden sibling to fill first, so no PROF_* glob sees a half-written directory."""
    partial = final.with_name(f".{final.name}.partial")
    if partial.exists():  # left over by an interrupted run
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    return partial


def prof_name(number: int, seconds: float, rng: random.Random) -> str:
    """``PROF_000001_20220729204439087_FMDBBBNDOAKFEOIA``."""
    letters = "".join(rng.choice(string.ascii_uppercase) for _ in range(16))
    return f"PROF_{number:06d}_{tables.stamp(seconds, 17)}_{letters}"


def _device_files(data: Path, meta: CaptureMeta, rng: random.Random, extra_mb: int) -> None:
    dev = meta.device_id
    start = {
        "collectionDateBegin": tables.stamp(meta.start_seconds, 17),
        "collectionTimeBegin": str(int(meta.start_seconds * 1e6)),
        "clockMonotonicRaw": "0",
    }
    end = {
        "collectionDateEnd": tables.stamp(meta.stop_seconds, 17),
        "collectionTimeEnd": str(int(meta.stop_seconds * 1e6)),
        "clockMonotonicRaw": "0",
    }
    info = {
        "devices": str(dev),
        "DeviceInfo": [
            {
                "id": dev,
                "ai_core_num": 24,
                "aiv_num": 48,
                "aic_frequency": "1800",
                "hwts_frequency": "50",
            }
        ],
        "pid": str(meta.pid),
    }
    sample = {
        "ai_core_metrics": "PipeUtilization",
        "ai_core_profiling_mode": "task-based",
        "devices": str(dev),
        "result_dir": str(data.parent),
    }
    for name, content in (("start_info", start), ("end_info", end), ("info.json", info)):
        (data / f"{name}.{dev}").write_text(json.dumps(content), encoding="utf-8")
    (data / "sample.json").write_text(json.dumps(sample), encoding="utf-8")
    for name in ("hwts.data", "aicore.data"):
        (data / f"{name}.{dev}.slice_0").write_bytes(rng.randbytes(4096 * meta.steps))
    if extra_mb > 0:  # a big raw capture, for the daemon's disk-quota handling
        with (data / f"ts_track.data.{dev}.slice_0").open("wb") as handle:
            block = rng.randbytes(_MIB)
            for _ in range(extra_mb):
                handle.write(block)


def write_raw(output: Path, meta: CaptureMeta, number: int, extra_mb: int = 0) -> Path:
    """``output/PROF_.../{host,device_N}/data/``, renamed into place once complete."""
    rng = random.Random(meta.seed)
    final = output / prof_name(number, meta.start_seconds, rng)
    partial = _atomic_dir(final)
    host = partial / "host" / "data"
    host.mkdir(parents=True)
    (host / META_NAME).write_text(json.dumps(asdict(meta), indent=1), encoding="utf-8")
    (host / "host_start.log").write_text(f"pid={meta.pid}\n", encoding="utf-8")
    device = partial / f"device_{meta.device_id}" / "data"
    device.mkdir(parents=True)
    _device_files(device, meta, rng, extra_mb)
    partial.rename(final)
    return final


def write_host_only(output: Path, number: int, seconds: float, seed: int) -> Path:
    """What a capture whose target died leaves behind: host data, no device data."""
    final = output / prof_name(number, seconds, random.Random(seed))
    (final / "host" / "data").mkdir(parents=True)
    return final


def read_meta(prof: Path) -> CaptureMeta:
    if not any(prof.glob("device_*/data")):
        raise IncompleteProf(f"{prof}: no device_* data; the collection did not finish")
    try:
        data = json.loads((prof / "host" / "data" / META_NAME).read_text(encoding="utf-8"))
        meta = CaptureMeta(**data)
    except (OSError, ValueError, TypeError) as exc:
        raise IncompleteProf(f"{prof}: host data unreadable ({exc})") from exc
    if meta.kind not in KINDS or meta.steps < 1:
        raise IncompleteProf(f"{prof}: host data describes no capture")
    return meta


def is_exported(prof: Path) -> bool:
    return (prof / EXPORT_DIR).is_dir()


def export(prof: Path, now: float, slice_rows: int = tables.SLICE_ROWS) -> list[Path]:
    """Write ``mindstudio_profiler_output/`` for one raw PROF dir; the files written."""
    meta = read_meta(prof)
    steps = simulate(
        meta.kind, meta.first_step, meta.steps, meta.step_seconds, meta.start_seconds, meta.seed
    )
    partial = _atomic_dir(prof / EXPORT_DIR)
    dev = meta.device_id
    written = tables.write_op_summary(
        partial, tables.kernel_rows(steps, dev, torch=False), now, slice_rows
    )
    ts = tables.stamp(now)
    pairs = PROFILES[meta.kind].reduce_pairs
    for path, header, rows in (
        (
            partial / f"op_statistic_{ts}.csv",
            tables.OP_STATISTIC_HEADER,
            tables.op_statistic_rows(steps, dev),
        ),
        (
            partial / f"step_trace_{ts}.csv",
            tables.step_trace_header(pairs),
            tables.step_trace_rows(steps, dev, pairs),
        ),
    ):
        tables.write_csv(path, header, rows)
        written.append(path)
    (partial / "README.txt").write_text(
        "Files exported by the npumon msprof simulator in the CANN 8 layout.\n", encoding="utf-8"
    )
    partial.rename(prof / EXPORT_DIR)
    return [prof / EXPORT_DIR / p.name for p in written]


def find_prof_dirs(path: Path) -> list[Path]:
    """``path`` itself when it is a PROF_* dir, else the PROF_* dirs directly under it."""
    if path.name.startswith("PROF_"):
        return [path]
    return sorted(p for p in path.glob("PROF_*") if p.is_dir())
