"""YAML files within bounds: size, nesting and alias expansion refused before building, lines
of key paths, and keys that are not names never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from npumon.daemon.config import ConfigError, load_config
from npumon.yamlfile import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NODES,
    YamlFileError,
    key_path,
    load_yaml,
)
from tests.helpers.yamlbomb import billion_laughs


def test_an_alias_bomb_is_refused_with_the_limit_and_its_value(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs())
    with pytest.raises(YamlFileError) as caught:
        load_yaml(path)
    assert f"{path}, line 6:" in str(caught.value)  # lol5 alone expands to 597,871 values
    assert f"more than the limit of {MAX_NODES} values with its aliases expanded" in str(
        caught.value
    )


def test_aliases_within_the_limit_load(tmp_path: Path) -> None:
    path = tmp_path / "npumon.yaml"
    path.write_text(
        "profiling:\n  targets:\n"
        "    - &train {workload: train, cmdline: train.py, npus: [0, 1]}\n"
        "    - {<<: *train, workload: eval}\n"
    )
    targets = load_config(path).profiling.targets
    assert [t.workload for t in targets] == ["train", "eval"]
    assert targets[1].npus == (0, 1)


def test_a_file_above_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * MAX_BYTES + "\n")
    with pytest.raises(YamlFileError, match=f"larger than the limit of {MAX_BYTES} bytes"):
        load_yaml(path)
    path.write_text("# " + "x" * (MAX_BYTES - 3) + "\n")  # exactly MAX_BYTES: read
    assert load_yaml(path).data is None


def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(YamlFileError, match=f"nested deeper than the limit of {MAX_DEPTH}"):
        load_yaml(path)
    path.write_text("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n")
    assert load_yaml(path).data is not None


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("a: &a [1, *a]\n")
    with pytest.raises(YamlFileError, match="line 1: an alias inside its own anchor"):
        load_yaml(path)


def test_not_utf8_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "npumon.yaml"
    path.write_bytes(b"chips:\n  timeout: \xff\xfe\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.problems == [f"not UTF-8 text: {path}, byte 19"]


def test_the_line_of_a_key_path(tmp_path: Path) -> None:
    path = tmp_path / "npumon.yaml"
    path.write_text("chips:\n  intervals:\n    table: 5s\nprofiling:\n  targets:\n    - {}\n")
    document = load_yaml(path)
    assert document.line(("chips", "intervals", "table")) == 3
    assert document.line(("chips", "intervals", "absent")) == 2  # missing: its mapping's key
    assert document.line(("profiling", "targets", 0, "workload")) == 6
    assert document.line(()) is None


def test_keys_that_are_not_names_are_not_shown() -> None:
    assert key_path(("throttle", "limits", "910B4", "power_watts")) == (
        "throttle.limits.910B4.power_watts"
    )
    assert key_path(("root:$6$salt$hash:19000:0:99999:7::",)) == "<key not shown>"
    assert key_path(("profiling", "targets", 0)) == "profiling.targets.0"
    assert key_path(()) == "(top level)"
