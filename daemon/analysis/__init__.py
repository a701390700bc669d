"""Profile analysis (pandas; run by `npumon analyze` and by the analysis worker, never in the
daemon): a profile directory in, an AnalysisReport out.

``readers/`` reads each unit (rank) of a profile into typed evidence, ``RankEvidence``;
``analysis.py`` assembles the profile's ``Evidence`` (``evidence.py``) from them, runs every rule
of ``rules/`` (one module per finding kind, built with ``findings.py``) and puts the summary,
per-rank scope and findings into one report; ``report.py`` (the CLI: text and JSON),
``html.py`` and ``figures.py`` present it; ``worker.py`` and ``limits.py`` are the worker
process the daemon starts.
"""
