"""The rules registry: every finding kind has its rule module, found without a list to edit."""

from __future__ import annotations

import importlib

from npumon.daemon.analysis.evidence import Evidence
from npumon.daemon.analysis.rules import RULES, diagnose
from npumon.daemon.model.profile import BOTTLENECK_KINDS, Bottleneck, Thresholds


def test_each_kind_has_one_rule_module_and_each_module_one_kind() -> None:
    assert sorted(r.kind for r in RULES) == sorted(BOTTLENECK_KINDS)


def test_rules_run_in_their_declared_order_and_no_two_share_a_place() -> None:
    orders = [r.order for r in RULES]
    assert orders == sorted(orders)
    assert len(set(orders)) == len(orders)


def test_each_rule_module_reports_its_own_kind_with_its_own_advice() -> None:
    for rule in RULES:
        module = importlib.import_module(f"npumon.daemon.analysis.rules.{rule.kind}")
        assert rule.kind == module.KIND
        assert isinstance(module.ADVICE, str) and module.ADVICE.endswith(".")


def test_findings_come_in_rule_order() -> None:
    evidence = Evidence(
        phase_ratios={"free": 0.5, "communication": 0.5}, small_ops_ratio=0.9, mode="eager"
    )
    found = diagnose(evidence, Thresholds())
    assert [b.kind for b in found] == ["host_bound", "communication", "small_ops"]
    assert all(isinstance(b, Bottleneck) for b in found)
