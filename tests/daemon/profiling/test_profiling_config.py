"""profiling: in the config: documented defaults, every problem listed, thresholds one model."""

from __future__ import annotations

from pathlib import Path

import pytest

from npumon.daemon.config import Config, ConfigError, load_config, parse_config
from npumon.daemon.model.profile import Thresholds

ROOT = Path(__file__).resolve().parents[3]


def test_documented_config_has_the_profiling_defaults() -> None:
    assert load_config(ROOT / "config" / "npumon.yaml").profiling == Config().profiling
    demo = load_config(ROOT / "config" / "demo.yaml").profiling
    assert demo.enabled and demo.interval < Config().profiling.interval and demo.targets


def test_profiling_config_problems_are_listed() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(
            {
                "profiling": {
                    "thresholds": {"free_ratio": 0.3, "bogus": 1},
                    "disk_quota": "lots",
                    "targets": [
                        {"workload": "a b", "cmdline": "("},
                        {"workload": "t", "process_name": "x", "mode": "torch_npu_config"},
                    ],
                }
            }
        )
    problems = "\n".join(caught.value.problems)
    assert "profiling.thresholds.bogus: unknown key" in problems
    assert "profiling.disk_quota" in problems
    assert "profiling.targets.0.workload" in problems
    assert "profiling.targets.0.cmdline: not a valid regular expression" in problems
    assert "mode torch_npu_config needs config_dir" in problems
    assert parse_config({"profiling": {"disk_quota": "512MiB"}}).profiling.disk_quota == 512 << 20
    only_ingest = parse_config({"profiling": {"ingest": {"paths": ["/data/prof"]}}}).profiling
    assert only_ingest.active() and not only_ingest.enabled


def test_thresholds_are_the_diagnosis_model_with_its_types() -> None:
    t = parse_config({"profiling": {"thresholds": {"free_ratio": 0.3, "warmup_steps": 5}}})
    thresholds = t.profiling.thresholds
    assert isinstance(thresholds, Thresholds)
    assert thresholds == Thresholds(free_ratio=0.3, warmup_steps=5)
    assert isinstance(thresholds.warmup_steps, int)
    assert Config().profiling.thresholds == Thresholds()
    with pytest.raises(ConfigError) as caught:
        parse_config({"profiling": {"thresholds": {"warmup_steps": 1.5, "free_ratio": -1}}})
    assert len(caught.value.problems) == 2


@pytest.mark.parametrize(
    ("given", "meant"), [(None, "last"), (True, "all"), (False, "none"), ("all", "all")]
)
def test_keep_raw_names_what_is_kept(given: object, meant: str) -> None:
    """ "last" by default; true and false, as older configs write it, are "all" and "none"."""
    profiling = {} if given is None else {"keep_raw": given}
    assert parse_config({"profiling": profiling}).profiling.keep_raw == meant


def test_keep_raw_refuses_other_words() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"profiling": {"keep_raw": "some"}})
    assert "profiling.keep_raw" in str(caught.value)
