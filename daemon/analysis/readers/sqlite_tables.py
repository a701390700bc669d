"""export_type=db: the same tables as the CSVs, read from SQLite with the standard library.

torch_npu writes ``ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_N.db`` (msprof: ``msprof_*.db``)
with one row per device task in TASK, the operator of each compute task in COMPUTE_TASK_INFO
(name, opType, taskType as ids into STRING_IDS) and one row per collective in COMMUNICATION_OP.
Waits (EVENT_WAIT, Notify Wait) and SDMA tasks of collectives stay in TASK only: never operators.

One step definition for both formats: a step is a row of torch_npu's step table, Computing +
Communication(Not Overlapped) + Free (the Stage), from ``analysis.db``'s StepTraceTime exactly as
from step_trace_time.csv. A db without analysis.db (msprof_*.db) has operators but no step time.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from npumon.daemon.analysis.readers import confine
from npumon.daemon.analysis.readers.ops import infer_op_type
from npumon.daemon.analysis.readers.steps import TorchStep
from npumon.daemon.analysis.readers.tables import TableError

if TYPE_CHECKING:
    import pandas as pd

COMPUTE_SQL = """
SELECT n.value AS name, o.value AS op_type, k.value AS core_type, tt.value AS task_type,
       (t.endNs - t.startNs) / 1000.0 AS duration_us
FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId
LEFT JOIN STRING_IDS n ON n.id = c.name
LEFT JOIN STRING_IDS o ON o.id = c.opType
LEFT JOIN STRING_IDS k ON k.id = c.taskType
LEFT JOIN STRING_IDS tt ON tt.id = t.taskType
"""
COMM_SQL = """
SELECT n.value AS name, n.value AS op_type, 'HCCL' AS core_type,
       (c.endNs - c.startNs) / 1000.0 AS duration_us
FROM COMMUNICATION_OP c LEFT JOIN STRING_IDS n ON n.id = c.opName
"""
# Level0 leaves COMPUTE_TASK_INFO's taskType N/A; TASK's own task type still names the core
# (as the Level1 capture of the same job types them; KERNEL_AICORE also runs a few MIX_AIV ops)
_CORE_OF_TASK = {
    "KERNEL_AICORE": "AI_CORE",
    "KERNEL_AIVEC": "AI_VECTOR_CORE",
    "KERNEL_AICPU": "AI_CPU",
    "KERNEL_MIX_AIC": "MIX_AIC",
    "KERNEL_MIX_AIV": "MIX_AIV",
    "MIX_AIC": "MIX_AIC",
    "MIX_AIV": "MIX_AIV",
    "STARS_COMMON": "DSA_SQE",
}
# TASK_PMU_INFO: (globalTaskId, name, value) rows, one per task and metric (aic_metrics=
# PipeUtilization); 910A names the vector ratios without the aiv_ prefix
_PMU_SQL = """
WITH pmu AS (
  SELECT p.globalTaskId AS id,
         MAX(CASE WHEN m.value IN ('aiv_vec_ratio', 'vec_ratio') THEN p.value END) AS vec,
         MAX(CASE WHEN m.value IN ('aiv_mte2_ratio', 'mte2_ratio') THEN p.value END) AS mte2,
         MAX(CASE WHEN m.value IN ('aiv_mte3_ratio', 'mte3_ratio') THEN p.value END) AS mte3,
         MAX(CASE WHEN m.value = 'mac_ratio' THEN p.value END) AS mac
  FROM TASK_PMU_INFO p JOIN STRING_IDS m ON m.id = p.name GROUP BY p.globalTaskId)
SELECT n.value AS name, o.value AS op_type, k.value AS core_type,
       (t.endNs - t.startNs) / 1000.0 AS duration_us,
       i.value AS input_shapes, s.value AS output_shapes,
       pmu.vec AS aiv_vec_ratio, pmu.mte2 AS aiv_mte2_ratio, pmu.mte3 AS aiv_mte3_ratio,
       pmu.mac AS mac_ratio
FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId
LEFT JOIN pmu ON pmu.id = c.globalTaskId
LEFT JOIN STRING_IDS n ON n.id = c.name
LEFT JOIN STRING_IDS o ON o.id = c.opType
LEFT JOIN STRING_IDS k ON k.id = c.taskType
LEFT JOIN STRING_IDS i ON i.id = c.inputShapes
LEFT JOIN STRING_IDS s ON s.id = c.outputShapes
"""
_STEP_COLUMNS = (
    "step",
    "computing",
    "communication_not_overlapped",
    "free",
    "preparing",
    "overlapped",
    "communication",
)
_ABSENT = ("N/A", "", None)


def connect(path: Path) -> sqlite3.Connection:
    try:  # the file opened without following links (confine.py); sqlite opens that same file
        fd = confine.open_fd(path)
    except OSError as exc:
        raise TableError(f"{path}: cannot read ({exc.strerror})") from exc
    try:  # read-only, and immutable: a WAL-mode export gets no -shm/-wal file beside it (the
        # worker runs as root and must never change a profile; exports are finished files)
        return sqlite3.connect(f"file:/proc/self/fd/{fd}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise TableError(f"{path}: cannot open the database ({exc})") from exc
    finally:
        os.close(fd)


def tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@dataclass(frozen=True, slots=True)
class Tasks:
    """Compute tasks and collectives as kernel_details rows: name, op_type, core_type,
    duration_us; ``inferred`` when the compute tasks carry no op type (Level0) and theirs were
    guessed from the kernel names, as for a text Level0 table (ops.infer_op_type)."""

    frame: pd.DataFrame
    inferred: bool


def _query(path: Path, sql: str) -> pd.DataFrame:
    import pandas as pd

    db = connect(path)
    try:
        return pd.read_sql_query(sql, db)
    except (sqlite3.Error, pd.errors.DatabaseError) as exc:
        raise TableError(f"{path}: unreadable database ({exc})") from exc
    finally:
        db.close()


def _absent(column: pd.Series) -> pd.Series:
    return column.where(~column.isin(_ABSENT))


def read_tasks(path: Path) -> Tasks:
    """The compute tasks (COMPUTE_TASK_INFO) and collectives (COMMUNICATION_OP) of one db.

    At Level0 every compute task's op type and core type is N/A: the op type is guessed from
    its name and the core type taken from TASK's task type (KERNEL_AIVEC -> AI_VECTOR_CORE).
    Collectives keep their own names as op type, so they never count as typed compute rows."""
    import pandas as pd

    have = table_names(path)
    if not {"TASK", "COMPUTE_TASK_INFO", "STRING_IDS"} <= have:
        raise TableError(
            f"{path}: no TASK / COMPUTE_TASK_INFO tables: not a profiler db "
            "export, or the export did not finish"
        )
    compute = _query(path, COMPUTE_SQL)
    for column in ("name", "op_type", "core_type", "task_type"):
        compute[column] = _absent(compute[column])
    inferred = bool(len(compute)) and not compute["op_type"].notna().any()
    if inferred:
        compute["op_type"] = compute["name"].map(infer_op_type)
    if not compute["core_type"].notna().any():
        compute["core_type"] = compute["task_type"].map(_CORE_OF_TASK)
    frames = [compute.drop(columns="task_type")]
    if "COMMUNICATION_OP" in have:
        frames.append(_query(path, COMM_SQL))
    frame = pd.concat(frames, ignore_index=True)
    for column in ("name", "op_type", "core_type"):
        frame[column] = _absent(frame[column]).astype("category")
    return Tasks(frame, inferred)


def read_pmu(path: Path) -> pd.DataFrame | None:
    """Every compute task with its shapes and vector PMU ratios, the columns of readers.read_pmu
    (mac_ratio only on 910A), and the collectives; None without TASK_PMU_INFO or vector ratios
    in it (Level0, or other aic_metrics)."""
    import pandas as pd

    have = table_names(path)
    if "TASK_PMU_INFO" not in have:
        return None
    frame = _query(path, _PMU_SQL)
    if not frame["aiv_vec_ratio"].notna().any():
        return None
    if "COMMUNICATION_OP" in have:  # their time counts in the share of operator time, as in
        # kernel_details (whose HCCL rows are read with the rest)
        frame = pd.concat([frame, _query(path, COMM_SQL)], ignore_index=True)
    if not frame["mac_ratio"].notna().any():
        frame = frame.drop(columns="mac_ratio")
    for column in ("name", "op_type", "core_type", "input_shapes", "output_shapes"):
        frame[column] = _absent(frame[column]).astype("category")
    return frame


def read_metadata(path: Path) -> dict[str, object] | None:
    """META_DATA's name/value rows as profiler_metadata.json's keys (ENV_VARIABLES,
    parallel_group_info: JSON text in the db); None without the table."""
    rows = select(path, "META_DATA", "SELECT name, value FROM META_DATA")
    if rows is None:
        return None
    data: dict[str, object] = {}
    for name, value in rows:
        try:
            data[str(name)] = json.loads(value) if isinstance(value, str) else value
        except ValueError:
            data[str(name)] = value
    return data


def select(path: Path, table: str, sql: str, *args: object) -> list[tuple[object, ...]] | None:
    """The rows of ``sql`` (on ``table``), None when the db has no such table."""
    db = connect(path)
    try:
        if table not in tables(db):
            return None
        return db.execute(sql, args).fetchall()
    except sqlite3.Error as exc:
        raise TableError(f"{path}: unreadable database ({exc})") from exc
    finally:
        db.close()


def table_names(path: Path) -> set[str]:
    db = connect(path)
    try:
        return tables(db)
    except sqlite3.Error as exc:
        raise TableError(f"{path}: unreadable database ({exc})") from exc
    finally:
        db.close()


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def read_steps(path: Path) -> list[TorchStep]:
    """analysis.db's StepTraceTime rows (microseconds, as the CSV)."""
    rows = (
        select(path, "StepTraceTime", f"SELECT {', '.join(_STEP_COLUMNS)} FROM StepTraceTime") or []
    )
    steps = []
    for step, computing, comm, free, prep, overlapped, comm_total in rows:
        value = _number(computing)
        if value is None:
            continue
        step_id = str(step).removeprefix("step")
        steps.append(
            TorchStep(
                int(step_id) if step_id.isdigit() else None,
                None,
                value,
                _number(comm),
                _number(free),
                _number(prep),
                _number(overlapped),
                _number(comm_total),
            )
        )
    return steps
