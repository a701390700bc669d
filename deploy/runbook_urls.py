#!/usr/bin/env python3
"""Give every alert (and its promtool test cases) a runbook_url into docs/runbooks.md.

    python3 deploy/runbook_urls.py          # add the missing ones (idempotent)
    python3 deploy/runbook_urls.py --check  # exit 1 when one is missing

The URL is `https://github.com/npumon/npumon/blob/main/docs/runbooks.md#<alert name in lower
case>`: absolute, so Slack and PagerDuty can follow it (the Helm chart swaps the base for
prometheusRule.runbookBaseUrl).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "config" / "prometheus" / "npumon-rules.yml"
TESTS = ROOT / "config" / "prometheus" / "npumon-rules.test.yml"
BASE = "https://github.com/npumon/npumon/blob/main/docs/runbooks.md#"


def url(alert: str) -> str:
    return BASE + alert.lower()


def _add(lines: list[str], name_pattern: str, annotations_key: str) -> list[str]:
    out: list[str] = []
    current: str | None = None
    for index, line in enumerate(lines):
        found = re.match(name_pattern, line)
        if found:
            current = found.group(1)
        out.append(line)
        if current and line.strip() == f"{annotations_key}:":
            indent = len(lines[index + 1]) - len(lines[index + 1].lstrip())
            following = lines[index + 1 : index + 12]
            if not any(
                x.strip().startswith("runbook_url:")
                for x in following
                if len(x) - len(x.lstrip()) == indent
            ):
                out.append(" " * indent + f'runbook_url: "{url(current)}"')
    return out


def fixed(path: Path, name_pattern: str, key: str) -> str:
    return "\n".join(_add(path.read_text().split("\n"), name_pattern, key))


def main(argv: list[str]) -> int:
    targets = (
        (RULES, r"\s*- alert: (\w+)", "annotations"),
        (TESTS, r"\s*(?:- )?alertname: (\w+)", "exp_annotations"),
    )
    stale = [
        path for path, pattern, key in targets if fixed(path, pattern, key) != path.read_text()
    ]
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(ROOT)}: an alert lacks runbook_url; run {sys.argv[0]}")
        return 1 if stale else 0
    for path, pattern, key in targets:
        path.write_text(fixed(path, pattern, key))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
