"""Judge the engines' alerts against the fault catalog, and the table docs/alerts.md carries.

    .venv/bin/python -m tests.alerts.report           # print the table (runs both engines)
    .venv/bin/python -m tests.alerts.report --write   # and rewrite docs/alerts.md's table

Per alert and engine: the catalog faults it exists for, on how many it fired, the longest delay
from the fault's start (against the delay its runbook states), and false pages (firing on a
must-not-page case, or on a fault it does not exist for).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from npumon.simulator.fault_catalog import Catalog, Scenario, load, seconds
from tests.alerts.engines import Firing, run_engines

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "config" / "prometheus" / "npumon-rules.yml"
DOC = ROOT / "docs" / "alerts.md"
ENGINES = ("prometheus", "victoriametrics")
BEGIN = "<!-- BEGIN GENERATED TABLE: .venv/bin/python -m tests.alerts.report --write -->"
END = "<!-- END GENERATED TABLE -->"


@dataclass
class Row:
    alert: str
    engine: str
    faults: list[str]
    fired: int
    delay: float | None  # the longest first-firing delay over the faults it fired on
    stated: float
    false_pages: list[str]


def _minutes(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 60:.1f} min"


def _fault_end(scenario: Scenario) -> float:
    return max(
        seconds(e.get("end", scenario.duration)) for e in scenario.events if not e.get("background")
    )


def judge(catalog: Catalog, engine: str, firings: Iterable[Firing]) -> tuple[list[Row], list[str]]:
    """The table rows of one engine and every way it misses the catalog (empty: it passes)."""
    by_scenario: dict[str, list[Firing]] = {}
    for firing in firings:
        by_scenario.setdefault(firing.scenario, []).append(firing)
    rows = {
        name: Row(name, engine, [], 0, None, stated, [])
        for name, stated in sorted(catalog.delays.items())
    }
    problems: list[str] = []
    for s in catalog.scenarios:
        seen = by_scenario.pop(s.name, [])
        allowed = set(s.expect + s.also) if s.kind == "fault" else set()
        for firing in seen:
            if firing.alertname not in allowed or firing.first < s.fault_start:
                row = rows.setdefault(
                    firing.alertname, Row(firing.alertname, engine, [], 0, None, 0, [])
                )
                if s.name not in row.false_pages:
                    row.false_pages.append(s.name)
                problems.append(
                    f"{engine}: {firing.alertname} fired on {s.name} ({s.kind}) at"
                    f" {_minutes(firing.first)} {dict(firing.labels)}"
                )
        for alert in s.expect:
            row = rows[alert]
            row.faults.append(s.name)
            mine = [f for f in seen if f.alertname == alert and f.first >= s.fault_start]
            if not mine:
                problems.append(f"{engine}: {alert} did not fire on {s.name}")
                continue
            row.fired += 1
            delay = min(f.first for f in mine) - s.fault_start
            row.delay = delay if row.delay is None else max(row.delay, delay)
            if delay > row.stated:
                problems.append(
                    f"{engine}: {alert} fired on {s.name} after {_minutes(delay)}, later than"
                    f" its stated {_minutes(row.stated)}"
                )
            # one alert per fault: what failed (node, chip, port) is the identity, never who
            # holds the chip (owners are the `owner` annotation)
            identities = {f.labels for f in mine}
            allowed_identities = s.identities.get(alert, 1)
            if len(identities) != allowed_identities:
                problems.append(
                    f"{engine}: {alert} on {s.name} raised {len(identities)} alerts, not"
                    f" {allowed_identities}: {sorted(identities)}"
                )
            wanted = s.names.get(alert, {})
            for labels in sorted(identities):
                wrong = {k: v for k, v in wanted.items() if dict(labels).get(k) != v}
                if wrong:
                    problems.append(
                        f"{engine}: {alert} on {s.name} named {dict(labels)}, not {wanted}"
                    )
            if s.resolves is not None:
                last = max(f.last for f in mine)
                late = last - _fault_end(s)
                if late > s.resolves:
                    problems.append(
                        f"{engine}: {alert} on {s.name} still fired {_minutes(late)} after the"
                        f" fault ended (resolves within {_minutes(s.resolves)})"
                    )
    for name, stray in by_scenario.items():
        problems.append(f"{engine}: alerts on an instance of no scenario {name}: {stray}")
    return list(rows.values()), problems


def table(rows: Iterable[Row]) -> str:
    lines = [
        "| alert | faults | fired | delay (longest / stated) | false pages | engine |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r.alert, r.engine)):
        faults = ", ".join(r.faults) or "-"
        false = ", ".join(r.false_pages) if r.false_pages else "0"
        delay = f"{_minutes(r.delay)} / {_minutes(r.stated)}"
        fired = f"{r.fired}/{len(r.faults)}"
        lines.append(f"| {r.alert} | {faults} | {fired} | {delay} | {false} | {r.engine} |")
    return "\n".join(lines) + "\n"


def with_table(document: str, generated: str) -> str:
    """docs/alerts.md with the text between the markers replaced."""
    head, rest = document.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{generated}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite docs/alerts.md's table")
    args = parser.parse_args(argv)
    catalog = load()
    rows: list[Row] = []
    failed: list[str] = []
    firings = run_engines(ENGINES, RULES, list(catalog.scenarios))
    for engine in ENGINES:
        engine_rows, problems = judge(catalog, engine, firings[engine])
        rows += engine_rows
        failed += problems
    generated = table(rows)
    print(generated, end="")
    for problem in failed:
        print(problem, file=sys.stderr)
    if args.write:
        DOC.write_text(with_table(DOC.read_text(), generated))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
