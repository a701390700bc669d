"""torch_npu dynamic_profile as a simulated job sees it: the config file, the *_ascend_pt dir."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from npumon.simulator import tables, torch_comm
from npumon.simulator.prof_dir import CaptureMeta, write_raw
from npumon.simulator.profiles import Step

CONFIG_FILE = "profiler_config.json"
OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
DATA_LOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
LOADER_SHARE = 0.9  # of Preparing: the simulated jobs wait for their data loader there
# what dynamic_profile.init() writes when the directory has no config yet: nothing to do
TEMPLATE: dict[str, Any] = {
    "activities": ["CPU", "NPU"],
    "prof_dir": "./",
    "analyse": False,
    "record_shapes": False,
    "profile_memory": False,
    "with_stack": False,
    "with_flops": False,
    "with_modules": False,
    "active": 1,
    "warmup": 0,
    "start_step": 0,
    "is_rank": False,
    "rank_list": [],
    "experimental_config": {
        "profiler_level": "Level0",
        "aic_metrics": "AiCoreNone",
        "l2_cache": False,
        "op_attr": False,
        "data_simplification": True,
        "record_op_args": False,
        "export_type": ["text"],
        "msprof_tx": False,
    },
    "is_valid": False,
}


@dataclass(frozen=True, slots=True)
class Plan:
    """A capture the config asked for: steps first_step .. first_step + active - 1."""

    first_step: int
    active: int
    prof_dir: Path
    analyse: bool
    config: dict[str, Any] = field(hash=False)

    @property
    def last_step(self) -> int:
        return self.first_step + self.active - 1


def _int(config: dict[str, Any], key: str, default: int) -> int:
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{key} must be a non-negative integer, got {value!r}")
    return value


def plan_from(config: dict[str, Any], current_step: int, rank: int) -> Plan | None:
    """None when the config asks for nothing (is_valid false, another rank); ValueError if bad."""
    if config.get("is_valid") is not True:
        return None
    if config.get("is_rank") is True and rank not in config.get("rank_list", []):
        return None
    active = _int(config, "active", 1)
    if active < 1:
        raise ValueError("active must be at least 1")
    # a relative prof_dir resolves against the job's working directory, not the json's
    prof_dir = Path(os.path.abspath(str(config.get("prof_dir") or "./")))
    first = max(_int(config, "start_step", 0), current_step + 1)
    return Plan(first, active, prof_dir, config.get("analyse", True) is not False, config)


class ConfigWatcher:
    """Polled once per step, like torch_npu's dynamic profiler: a changed file is re-read."""

    def __init__(self, directory: Path, rank: int, log: TextIO) -> None:
        self.path = directory / CONFIG_FILE
        self.rank = rank
        self.log = log
        directory.mkdir(parents=True, exist_ok=True)
        self._seen = self._signature()
        if self._seen is None:
            # written whole then renamed, so a reader never meets a half-written template; and
            # nothing is marked seen, so an edit made right after the rename is still read
            partial = self.path.with_name(f".{CONFIG_FILE}.{os.getpid()}")
            partial.write_text(json.dumps(TEMPLATE, indent=4), encoding="utf-8")
            os.replace(partial, self.path)

    def _signature(self) -> tuple[int, int, str] | None:
        try:
            stat = self.path.stat()
            return stat.st_mtime_ns, stat.st_size, self.path.read_text(encoding="utf-8")
        except OSError:
            return None

    def poll(self, current_step: int) -> Plan | None:
        signature = self._signature()
        if signature is None or signature == self._seen:
            return None
        self._seen = signature
        try:
            config = json.loads(signature[2])
            if not isinstance(config, dict):
                raise ValueError("not a JSON object")
            return plan_from(config, current_step, self.rank)
        except ValueError as error:
            print(f"[WARNING] dynamic_profile: ignoring {self.path}: {error}", file=self.log)
            return None


def _profiler_info(plan: Plan, steps: Sequence[Step], rank: int, end_seconds: float) -> str:
    exp = plan.config.get("experimental_config")
    exp = exp if isinstance(exp, dict) else {}
    info = {
        "config": {
            "common_config": {
                "activities": [f"ProfilerActivity.{a}" for a in plan.config.get("activities", [])],
                "schedule": {
                    "wait": 0,
                    "active": plan.active,
                    "warmup": 0,
                    "repeat": 1,
                    "skip_first": 0,
                },
                "record_shapes": bool(plan.config.get("record_shapes", False)),
            },
            "experimental_config": {f"_{k}": v for k, v in exp.items()},
        },
        "start_info": {
            "syscnt_enable": True,
            "freq": 100,
            "collectionTimeBegin": int(steps[0].start_us * 1000),
        },
        "end_info": {"collectionTimeEnd": int(end_seconds * 1e9)},
        "torch_npu_version": "2.7.1",
        "cann_version": "8.3.RC1",
        "rank_id": str(rank),
    }
    return json.dumps(info, indent=4)


def trace_view(steps: Sequence[Step], pid: int) -> list[dict[str, Any]]:
    """The host timeline torch_npu writes, only its step spans and each step's batch fetch (the
    data loader's span at the step's start), fields in torch_npu's order."""
    events: list[dict[str, Any]] = []
    for step in steps:
        start = step.start_us
        for name, ts, dur in (
            (f"ProfilerStep#{step.step_id}", start, step.preparing_us + step.total_us),
            (DATA_LOADER, start + 1.0, step.preparing_us * LOADER_SHARE),
        ):
            events.append(
                {
                    "ph": "X",
                    "name": name,
                    "pid": pid,
                    "tid": pid,
                    "ts": f"{ts:.3f}",
                    "dur": round(dur, 3),
                    "cat": "cpu_op",
                    "args": {"Sequence number": -1, "Fwd thread id": 0},
                }
            )
    return events


def write_ascend_pt(
    plan: Plan,
    steps: Sequence[Step],
    meta: CaptureMeta,
    rank: int | None,
    hostname: str,
    world_size: int = 1,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """``<prof_dir>/<host>_<pid>_<ms stamp>_ascend_pt/``: complete once ASCEND_PROFILER_OUTPUT
    appears (renamed into place last), as a half-written profile must never look finished.
    profiler_metadata.json records ``environ``'s variables (torch_comm.ENV_NAMES) and a data
    parallel group of ``world_size`` ranks; communication.json the steps' all-reduces."""
    name = f"{hostname}_{meta.pid}_{tables.stamp(meta.start_seconds, 17)}_ascend_pt"
    final = plan.prof_dir / name
    partial = plan.prof_dir / f".{name}.partial"
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    info_name = "profiler_info.json" if rank is None else f"profiler_info_{rank}.json"
    (partial / info_name).write_text(
        _profiler_info(plan, steps, rank or 0, meta.stop_seconds), encoding="utf-8"
    )
    (partial / "profiler_metadata.json").write_text(
        json.dumps(torch_comm.metadata(rank or 0, world_size, environ), indent=4), encoding="utf-8"
    )
    (partial / "FRAMEWORK").mkdir()
    write_raw(partial, meta, 1)  # the CANN raw data torch_npu exports from
    tables_dir = partial / f"{OUTPUT_DIR}.partial"
    if plan.analyse:
        tables_dir.mkdir()
        dev = meta.device_id
        for file, header, rows in (
            (
                "kernel_details.csv",
                tables.KERNEL_DETAILS_HEADER,
                tables.kernel_rows(steps, dev, torch=True),
            ),
            ("op_statistic.csv", tables.OP_STATISTIC_HEADER, tables.op_statistic_rows(steps, dev)),
            (
                "step_trace_time.csv",
                tables.STEP_TRACE_TIME_HEADER,
                tables.step_trace_time_rows(steps, dev),
            ),
        ):
            tables.write_csv(tables_dir / file, header, rows)
        (tables_dir / "trace_view.json").write_text(
            json.dumps(trace_view(steps, meta.pid)), encoding="utf-8"
        )
        group = str(10**18 + meta.seed % 10**18)  # HCCL's group name: a hash of its ranks
        (tables_dir / "communication.json").write_text(
            json.dumps(torch_comm.communication(steps, meta.kind, group), indent=4),
            encoding="utf-8",
        )
    partial.rename(final)
    if plan.analyse:
        (final / f"{OUTPUT_DIR}.partial").rename(final / OUTPUT_DIR)
    return final
