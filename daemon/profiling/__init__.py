"""The capture side of profiling, in the daemon: which workloads to profile (``workloads``), one
capture at a time on a schedule (``service``, ``capture``: checks, profiler phase, export,
analysis, cleanup) through torch_npu's dynamic profile (``capture_torch``) or msprof attach
(``capture_msprof``, ``prompt``), backing off when another profiler is on the job (``busy``);
profiles jobs wrote themselves (``ingest``); the analysis worker started by module name with a
deadline (``launch``: pandas never enters the daemon; the analysis is ``daemon/analysis``); the
disk budget (``diskquota``), the step-time regression gate against a baseline (``gate``) and the
state that survives a restart (``state``, ``statefile``).
"""
