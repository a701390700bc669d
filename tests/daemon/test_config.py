"""Config: defaults documented in config/npumon.yaml, durations, every problem with its path."""

from __future__ import annotations

from pathlib import Path

import pytest

from npumon.daemon.cli import main
from npumon.daemon.config import Config, ConfigError, load_config, parse_config
from tests.support import ROOT


def test_documented_config_is_exactly_the_defaults() -> None:
    assert load_config(ROOT / "config" / "npumon.yaml") == Config()


def test_shipped_configs_are_valid_and_write_no_deprecated_key() -> None:
    told: list[tuple[str, str]] = []
    paths = [*(ROOT / "config").glob("*.yaml"), *(ROOT / "deploy" / "compose").glob("*.yaml")]
    for path in sorted(paths):
        load_config(path, lambda *warning: told.append(warning))
    assert len(paths) >= 5 and told == []


def test_one_key_is_a_valid_config() -> None:
    config = parse_config({"chips": {"timeout": "3s"}})
    assert config.chips.timeout == 3.0
    assert config.chips.intervals.table == 5.0


@pytest.mark.parametrize(
    ("text", "seconds"), [("500ms", 0.5), ("15s", 15.0), ("10m", 600.0), ("1h", 3600.0), (7, 7.0)]
)
def test_durations(text: object, seconds: float) -> None:
    assert parse_config({"chips": {"timeout": text}}).chips.timeout == seconds


def test_every_problem_is_listed_with_its_dotted_path() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(
            {
                "chips": {"timeout": "soon", "intervals": {"table": "-5s", "bogus": 1}},
                "web": {"listen_adress": ":1"},
                "logging": {"level": "loud"},
                "extra": True,
            }
        )
    problems = caught.value.problems
    assert any(p.startswith("chips.timeout: expected a duration") for p in problems)
    assert "chips.intervals.bogus: unknown key" in problems
    assert "web.listen_adress: unknown key, did you mean listen_address?" in problems
    assert "extra: unknown key" in problems
    assert any(p.startswith("logging.level:") for p in problems)
    assert any(p.startswith("chips.intervals.table:") for p in problems)
    assert len(problems) == 6


def test_detail_collectors_are_switched_on_by_name_and_only_once() -> None:
    on = parse_config({"collectors": {"enabled": ["network_detail", "interconnect_detail"]}})
    assert on.collectors.enabled == ("network_detail", "interconnect_detail")
    with pytest.raises(ConfigError) as caught:
        parse_config({"collectors": {"enabled": ["network"]}})  # a default collector: always on
    assert caught.value.problems[0].startswith(
        "collectors.enabled.0: expected one of network_detail, optical_detail, interconnect_detail"
    )
    with pytest.raises(ConfigError, match="network_detail: both enabled and disabled"):
        parse_config(
            {"collectors": {"enabled": ["network_detail"], "disabled": ["network_detail"]}}
        )


def test_empty_file_is_all_defaults(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert load_config(path) == Config()


def test_not_yaml_and_not_a_mapping(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("npu_smi: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    bad.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")


def test_throttle_limits_match_exact_then_longest_prefix() -> None:
    throttle = parse_config(
        {"throttle": {"limits": {"910B": {"power_watts": 350}, "910B4": {"power_watts": 300}}}}
    ).throttle
    assert throttle.limits_for("910B4-1").power_watts == 300
    assert throttle.limits_for("910B1").power_watts == 350
    assert throttle.limits_for("310P3").power_watts == 400
    assert throttle.limits_for(None).temperature_celsius == 85


def test_check_config_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("chips:\n  timeout: 2s\n")
    assert main(["check-config", str(good)]) == 0
    assert capsys.readouterr().err == ""
    bad = tmp_path / "bad.yaml"
    bad.write_text("chips:\n  timout: 2s\nweb:\n  listen_address: 5\n")
    assert main(["check-config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "2 problem(s)" in err
    assert "line 2: chips.timout: unknown key, did you mean timeout?" in err
    assert "web.listen_address:" in err


def test_type_errors_say_what_was_expected_and_what_was_found() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(
            {
                "npu_smi": {"command": "npu-smi"},
                "web": {"max_requests": "lots", "listen_address": "nohost:abc"},
            }
        )
    problems = caught.value.problems
    assert (
        "npu_smi.command: expected a list, e.g. [npu-smi] or [/usr/local/bin/npu-smi, "
        "--flag], got text"
    ) in problems
    assert "web.max_requests: expected a whole number, got text" in problems
    assert any(
        p.startswith("web.listen_address: expected [host]:port") and p.endswith("got text")
        for p in problems
    )


BAD = """\
logging:
  level: loud
profiling:
  intreval: 2m
  disk_quota: lots-of-it
  targets:
    - {workload: train, cmdline: train, intervall: 5m}
throttle:
  limits:
    910B: {temprature_celsius: 80}
web:
  listen_address: hunter2-secret
"""


def test_check_config_speaks_plain_words_and_never_quotes_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "npumon.yaml"
    bad.write_text(BAD)
    assert main(["check-config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"{bad}: 6 problem(s)",  # in the order of config/npumon.yaml's sections
        "  line 10: throttle.limits.910B.temprature_celsius: unknown key, did you mean "
        "temperature_celsius?",
        "  line 12: web.listen_address: expected [host]:port, e.g. ':9732', '127.0.0.1:9732' or "
        "'[::]:9732', got text",
        "  line 2: logging.level: expected one of debug, info, warning, error, got text",
        "  line 7: profiling.targets.0.intervall: unknown key, did you mean interval?",
        "  line 5: profiling.disk_quota: expected a size such as 256MiB, 2GiB or 500MB, got text",
        "  line 4: profiling.intreval: unknown key, did you mean interval?",
    ]
    assert "hunter2" not in err and "lots-of-it" not in err and "loud" not in err


def test_yaml_errors_name_the_file_and_line_but_not_its_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "npumon.yaml"
    bad.write_text('web:\n  config_file: "/etc/hunter2\nchips:\n  timeout: 5s\n')
    assert main(["check-config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert (
        f"not valid YAML at {bad}, line 5, column 1: found unexpected end of stream "
        "(while scanning a quoted scalar begun on line 2)" in err
    )
    assert "<unicode string>" not in err and "hunter2" not in err and "^" not in err


# The chip settings as an older config wrote them (under npu_smi), and as this release writes
# them (under chips, npu_smi keeping only the CLI's command).
OLD_STYLE = """\
npu_smi:
  command: [/opt/npu-smi, --flag]
  timeout: 3s
  intervals: {table: 2s, identity: 10m}
  max_processes_per_chip: 4
  backend: cli
"""
NEW_STYLE = """\
chips:
  timeout: 3s
  intervals: {table: 2s, identity: 10m}
  max_processes_per_chip: 4
  backend: cli
npu_smi:
  command: [/opt/npu-smi, --flag]
"""


def test_chip_settings_under_npu_smi_load_as_chips_with_one_warning(tmp_path: Path) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(OLD_STYLE)
    new.write_text(NEW_STYLE)
    told: list[tuple[str, str]] = []
    config = load_config(old, lambda *warning: told.append(warning))
    assert config == load_config(new, lambda *warning: told.append(warning))
    assert config.chips != Config().chips and config.npu_smi.command == ("/opt/npu-smi", "--flag")
    assert told == [
        (
            str(old),
            "npu_smi.timeout, npu_smi.intervals, npu_smi.max_processes_per_chip, "
            "npu_smi.backend: deprecated, write chips.timeout, chips.intervals, "
            "chips.max_processes_per_chip, chips.backend (npu_smi keeps only command); the old "
            "keys are read until npumon 0.3.0",
        )
    ]


def test_the_daemon_logs_the_deprecation_once_per_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = tmp_path / "old.yaml"
    old.write_text("npu_smi:\n  timeout: 3s\n")
    load_config(old)
    warnings = [r.getMessage() for r in caplog.records if "config_deprecated" in r.getMessage()]
    assert len(warnings) == 1 and "npu_smi.timeout: deprecated, write chips.timeout" in warnings[0]


def test_check_config_prints_the_deprecation_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.yaml"
    old.write_text(OLD_STYLE)
    assert main(["check-config", str(old)]) == 0
    out, err = capsys.readouterr()
    assert out == f"{old}: ok\n"
    assert err.startswith(f"{old}: warning: npu_smi.timeout, npu_smi.intervals, ")
    assert "write chips.timeout, chips.intervals" in err and err.count("\n") == 1


def test_chip_settings_in_both_places_are_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = tmp_path / "both.yaml"
    both.write_text("chips:\n  timeout: 3s\nnpu_smi:\n  command: [npu-smi]\n  backend: cli\n")
    assert main(["check-config", str(both)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{both}: 1 problem(s)",
        "  line 5: npu_smi.backend: a chips setting, and this file also has chips; move it to "
        "chips.backend",
    ]


def test_problems_name_a_chip_setting_where_the_file_wrote_it(tmp_path: Path) -> None:
    old = tmp_path / "old.yaml"
    old.write_text("npu_smi:\n  timeout: soon\n  intervals:\n    tabel: 5s\n  comand: [x]\n")
    with pytest.raises(ConfigError) as caught:
        load_config(old, lambda *_: None)
    assert caught.value.problems == [
        "line 2: npu_smi.timeout: expected a duration like '500ms', '15s', '10m' or '1h', got text",
        "line 4: npu_smi.intervals.tabel: unknown key, did you mean table?",
        "line 5: npu_smi.comand: unknown key, did you mean command?",
    ]
