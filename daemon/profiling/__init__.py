"""Profiler output: locate tables, read them (pandas, imported lazily), analyse, diagnose, report."""
