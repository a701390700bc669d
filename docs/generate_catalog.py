#!/usr/bin/env python3
"""The README's fault-catalog sentence, counted from simulator/fault_catalog.yaml.

    make generate                                     # the same as the next line
    .venv/bin/python docs/generate_catalog.py         # rewrite it if out of date
    .venv/bin/python docs/generate_catalog.py --check # exit 1 if it is out of date

Written between `<!-- catalog:begin -->` and `<!-- catalog:end -->`;
tests/alerts/test_alert_catalog.py checks it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from npumon.simulator.fault_catalog import Catalog, load

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BEGIN, END = "<!-- catalog:begin -->", "<!-- catalog:end -->"


def sentence(catalog: Catalog) -> str:
    faults = sum(s.kind == "fault" for s in catalog.scenarios)
    quiet = sum(s.kind == "must_not_page" for s in catalog.scenarios)
    return (
        f"Each of the {len(catalog.delays)} alerts is replayed against the {faults} scripted"
        f" faults and {quiet} must-not-page cases of the fault catalog on Prometheus and"
        " VictoriaMetrics, with its delay and false pages:"
    )


def readme(text: str, catalog: Catalog) -> str:
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}{sentence(catalog)}{END}{tail}"


def main(argv: list[str]) -> int:
    current = README.read_text()
    wanted = readme(current, load())
    if wanted == current:
        return 0
    if "--check" in argv:
        print(f"{README} is out of date: make generate", file=sys.stderr)
        return 1
    README.write_text(wanted)
    print(f"wrote {README.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
