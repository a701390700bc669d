"""The alert rules pass promtool, and every alert has a firing and a non-firing unit test case."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "config" / "prometheus" / "npumon-rules.yml"
RULE_TESTS = ROOT / "config" / "prometheus" / "npumon-rules.test.yml"
PROMTOOL = shutil.which("promtool")

def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None, "promtool is not installed: `make tools` installs it"
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60,
                          cwd=RULES.parent, check=False)


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def case_kinds() -> tuple[set[str], set[str]]:
    """(alerts with a case that fires, alerts with a case that must stay silent)."""
    firing: set[str] = set()
    silent: set[str] = set()
    for group in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for case in group.get("alert_rule_test", []):
            (firing if case.get("exp_alerts") else silent).add(case["alertname"])
    return firing, silent


@pytest.mark.integration
def test_promtool_check_rules() -> None:
    result = promtool("check", "rules", RULES.name)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.integration
def test_promtool_test_rules() -> None:
    result = promtool("test", "rules", RULE_TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    names = {rule["alert"] for rule in alert_rules()}
    firing, silent = case_kinds()
    assert names - firing == set(), "alerts without a firing case"
    assert names - silent == set(), "alerts without a case that must not fire"
    assert (firing | silent) - names == set(), "test cases for alerts that do not exist"


def test_every_alert_is_complete() -> None:
    for rule in alert_rules():
        assert "for" in rule, rule["alert"]
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}, rule["alert"]
        assert rule["annotations"]["summary"].strip(), rule["alert"]
        assert len(rule["annotations"]["description"].split()) >= 10, rule["alert"]


def test_unallocated_idle_chips_are_asserted_silent() -> None:
    """The low-utilization alerts have a silent case whose input holds an idle, unallocated chip."""
    low = {"NpuAllocatedChipLowUtilization", "NpuAllocatedChipIdle"}
    for group in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        cases = group.get("alert_rule_test", [])
        silent = {case["alertname"] for case in cases if not case.get("exp_alerts")}
        series = " ".join(item["series"] for item in group["input_series"])
        if low <= silent and "npu_profiling_active" in series:
            return
    pytest.fail("no silent case for idle-unallocated and profiled chips")


def test_every_alert_has_a_runbook_that_exists() -> None:
    headings = {line[3:].strip() for line in
                (ROOT / "docs" / "runbooks.md").read_text().splitlines() if line.startswith("## ")}
    for rule in alert_rules():
        url = rule["annotations"].get("runbook_url", "")
        assert url == f"docs/runbooks.md#{rule['alert'].lower()}", rule["alert"]
        assert rule["alert"].lower() in headings, f"no runbook for {rule['alert']}"
    check = subprocess.run([sys.executable, str(ROOT / "deploy" / "runbook_urls.py"), "--check"],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout  # the promtool cases expect it too


def test_fault_levels_map_to_severities_as_documented() -> None:
    by_name = {rule["alert"]: rule for rule in alert_rules()}
    chip, job = by_name["NpuFaultNeedsChipAction"], by_name["NpuFaultNeedsJobAction"]
    assert chip["labels"]["severity"] == "critical" and job["labels"]["severity"] == "warning"
    levels = {"separate_npu", "pre_separate_npu", "restart_npu", "free_restart_npu",
              "restart_business", "restart_request", "sub_health", "unknown"}
    named = set(re.findall(r"[a-z_]+", chip["expr"].split('level=~"')[1].split('"')[0]))
    named |= set(re.findall(r"[a-z_]+", job["expr"].split('level=~"')[1].split('"')[0]))
    assert named == levels  # every level but not_handle alerts, once
