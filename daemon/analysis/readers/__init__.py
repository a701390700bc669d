"""The readers: each module reads one kind of table or file of a profile, whatever its export
generation, into typed values; they read and measure, never judge (rules/ does), and know no
threshold. reading.py orders them over one profile unit.

``tables`` (big CSVs with pandas, ``chunks`` in parallel), ``steps`` and ``steptime`` (the
per-step tables), ``layout`` (which files a directory holds, per unit), ``sqlite_*``
(export_type=db), ``mindspore`` (MindSpore <= 2.2), ``comm`` (communication(_matrix).json),
``host`` (data loader and on-line compilation), ``affinity`` (the host API timeline),
``environment`` and ``replicas`` (profiler_metadata.json), ``ops`` and ``collectives`` (operator
time by type), ``pmu`` and ``fusible`` (the PMU columns of kernel tables); ``confine`` opens files
without following links.
"""
