"""The alert rules pass promtool, and every alert has a firing and a non-firing unit test case."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from npumon.simulator.fault_catalog import seconds
from tests.helpers.wait import scaled

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "config" / "prometheus" / "npumon-rules.yml"
RULE_TESTS = ROOT / "config" / "prometheus" / "npumon-rules.test.yml"
PROMTOOL = shutil.which("promtool")
# The project's docs URL (absolute: Slack and PagerDuty cannot follow a relative link)
RUNBOOKS = "https://github.com/npumon/npumon/blob/main/docs/runbooks.md"
# Which jobs are npumon: written once, in the npumon_target:up rule (the file's header tells
# non-Helm users the sed line; the chart replaces this text with its value)
JOB_MATCHER = 'job=~"npumon.*"'
# promtool's Go runtime collects garbage at 4x the live heap instead of 2x: a quarter less CPU
# on the rule unit tests for about 50 MB more memory
PROMTOOL_ENV = {**os.environ, "GOGC": "400"}


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None, "promtool is not installed: `make tools` installs it"
    return subprocess.run(
        [PROMTOOL, *args],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        cwd=RULES.parent,
        env=PROMTOOL_ENV,
        check=False,
    )


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


def _eval_seconds(group: dict[str, Any]) -> float:
    """The latest eval_time of a test group: how long promtool evaluates it."""
    cases = [c for kind in ("alert_rule_test", "promql_expr_test") for c in group.get(kind, [])]
    return max((seconds(c["eval_time"]) for c in cases), default=0.0)


@pytest.mark.integration
def test_promtool_test_rules(tmp_path: Path) -> None:
    """Every test group of the unit test file, the groups dealt into two files of about the same
    evaluation time that two promtool processes run side by side (promtool runs one file's
    groups one after the other, on one core)."""
    assert PROMTOOL is not None, "promtool is not installed: `make tools` installs it"
    document = yaml.safe_load(RULE_TESTS.read_text())
    shares: list[list[dict[str, Any]]] = [[], []]
    for group in sorted(document["tests"], key=_eval_seconds, reverse=True):
        min(shares, key=lambda share: sum(map(_eval_seconds, share))).append(group)
    running = []
    for index, share in enumerate(shares):
        part = {**document, "rule_files": [str(RULES)], "tests": share}
        path = tmp_path / f"part-{index}.test.yml"
        path.write_text(yaml.safe_dump(part, sort_keys=False))
        running.append(
            subprocess.Popen(
                [PROMTOOL, "test", "rules", path.name],
                cwd=tmp_path,
                env=PROMTOOL_ENV,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    for process in running:
        output, _ = process.communicate(timeout=scaled(120))
        assert process.returncode == 0, output
    assert sum(map(len, shares)) == len(document["tests"])


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
    headings = {
        line[3:].strip()
        for line in (ROOT / "docs" / "runbooks.md").read_text().splitlines()
        if line.startswith("## ")
    }
    for rule in alert_rules():
        url = rule["annotations"].get("runbook_url", "")
        assert url == f"{RUNBOOKS}#{rule['alert'].lower()}", rule["alert"]
        assert rule["alert"].lower() in headings, f"no runbook for {rule['alert']}"
    check = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "runbook_urls.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert check.returncode == 0, check.stdout  # the promtool cases expect it too


def test_fault_levels_map_to_severities_as_documented() -> None:
    by_name = {rule["alert"]: rule for rule in alert_rules()}
    chip, job = by_name["NpuFaultNeedsChipAction"], by_name["NpuFaultNeedsJobAction"]
    assert chip["labels"]["severity"] == "critical" and job["labels"]["severity"] == "warning"
    levels = {
        "separate_npu",
        "pre_separate_npu",
        "restart_npu",
        "free_restart_npu",
        "restart_business",
        "restart_request",
        "sub_health",
        "unknown",
    }
    named = set(re.findall(r"[a-z_]+", chip["expr"].split('level=~"')[1].split('"')[0]))
    named |= set(re.findall(r"[a-z_]+", job["expr"].split('level=~"')[1].split('"')[0]))
    assert named == levels  # every level but not_handle alerts, once


def test_the_job_matcher_is_written_once() -> None:
    expressions = [
        rule["expr"]
        for group in yaml.safe_load(RULES.read_text())["groups"]
        for rule in group["rules"]
    ]
    assert [e for e in expressions if JOB_MATCHER in e] == ['up{job=~"npumon.*"}']
    assert not [e for e in expressions if "up{" in e.replace(" ", "") and JOB_MATCHER not in e]
    header = RULES.read_text().split("groups:")[0]
    assert 'sed -i \'s/job=~"npumon\\.\\*"/job="npu-exporter"/\' npumon-rules.yml' in header


@pytest.mark.integration
def test_the_documented_sed_renames_the_job(tmp_path: Path) -> None:
    """The header's sed line, run on a copy, makes NpumonDown fire for a job named npu-exporter
    and no longer for one named npumon."""
    line = next(x for x in RULES.read_text().splitlines() if "sed -i 's/job=" in x)
    command = line.strip().removeprefix("#").strip()
    (tmp_path / RULES.name).write_text(RULES.read_text())
    subprocess.run(shlex.split(command), cwd=tmp_path, check=True, timeout=scaled(30))
    renamed = (tmp_path / RULES.name).read_text()
    assert JOB_MATCHER not in renamed.split("groups:")[1]
    (tmp_path / "down.test.yml").write_text(
        yaml.safe_dump(
            {
                "rule_files": [RULES.name],
                "evaluation_interval": "1m",
                "tests": [
                    {
                        "interval": "1m",
                        "input_series": [
                            {"series": 'up{instance="n1", job="npu-exporter"}', "values": "0x20"},
                            {"series": 'up{instance="n2", job="npumon"}', "values": "0x20"},
                        ],
                        "promql_expr_test": [
                            {
                                "expr": 'ALERTS{alertname="NpumonDown"}',
                                "eval_time": "10m",
                                "exp_samples": [
                                    {
                                        "value": 1,
                                        "labels": (
                                            'ALERTS{alertname="NpumonDown", alertstate="firing",'
                                            ' instance="n1", job="npu-exporter",'
                                            ' severity="warning"}'
                                        ),
                                    }
                                ],
                            }
                        ],
                    }
                ],
            }
        )
    )
    assert PROMTOOL is not None, "promtool is not installed: `make tools` installs it"
    result = subprocess.run(
        [PROMTOOL, "test", "rules", "down.test.yml"],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
