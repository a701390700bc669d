"""Profiler output: find tables, read them (pandas, lazily), analyse, diagnose, report."""
