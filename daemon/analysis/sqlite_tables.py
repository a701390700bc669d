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

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from npumon.daemon.analysis.readers import TableError
from npumon.daemon.analysis.steps import TorchStep

if TYPE_CHECKING:
    import pandas as pd

COMPUTE_SQL = """
SELECT n.value AS name, o.value AS op_type, k.value AS core_type,
       (t.endNs - t.startNs) / 1000.0 AS duration_us
FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId
LEFT JOIN STRING_IDS n ON n.id = c.name
LEFT JOIN STRING_IDS o ON o.id = c.opType
LEFT JOIN STRING_IDS k ON k.id = c.taskType
"""
COMM_SQL = """
SELECT n.value AS name, n.value AS op_type, 'HCCL' AS core_type,
       (c.endNs - c.startNs) / 1000.0 AS duration_us
FROM COMMUNICATION_OP c LEFT JOIN STRING_IDS n ON n.id = c.opName
"""
_STEP_COLUMNS = ("step", "computing", "communication_not_overlapped", "free", "preparing")
_ABSENT = ("N/A", "", None)


def _connect(path: Path) -> sqlite3.Connection:
    try:  # read-only, and immutable: a WAL-mode export gets no -shm/-wal file beside it (the
        # worker runs as root and must never change a profile; exports are finished files)
        return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise TableError(f"{path}: cannot open the database ({exc})") from exc


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def read_tasks(path: Path) -> pd.DataFrame:
    """Compute tasks and collectives as kernel_details rows: name, op_type, core_type,
    duration_us (op_type missing on Level0, as in the CSV)."""
    import pandas as pd

    db = _connect(path)
    try:
        have = _tables(db)
        if not {"TASK", "COMPUTE_TASK_INFO", "STRING_IDS"} <= have:
            raise TableError(f"{path}: no TASK / COMPUTE_TASK_INFO tables: not a profiler db "
                             "export, or the export did not finish")
        sql = COMPUTE_SQL + (" UNION ALL " + COMM_SQL if "COMMUNICATION_OP" in have else "")
        frame = pd.read_sql_query(sql, db)
    except sqlite3.Error as exc:
        raise TableError(f"{path}: unreadable database ({exc})") from exc
    finally:
        db.close()
    for column in ("name", "op_type", "core_type"):
        frame[column] = frame[column].where(~frame[column].isin(_ABSENT)).astype("category")
    return frame


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def read_steps(path: Path) -> list[TorchStep]:
    """analysis.db's StepTraceTime rows (microseconds, as the CSV)."""
    db = _connect(path)
    try:
        if "StepTraceTime" not in _tables(db):
            return []
        rows: Sequence[tuple[object, ...]] = db.execute(
            f"SELECT {', '.join(_STEP_COLUMNS)} FROM StepTraceTime"
        ).fetchall()
    except sqlite3.Error as exc:
        raise TableError(f"{path}: unreadable database ({exc})") from exc
    finally:
        db.close()
    steps = []
    for step, computing, comm, free, prep in rows:
        value = _number(computing)
        if value is None:
            continue
        step_id = str(step).removeprefix("step")
        steps.append(TorchStep(int(step_id) if step_id.isdigit() else None, None, value,
                               _number(comm), _number(free), _number(prep)))
    return steps
