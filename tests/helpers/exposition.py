"""Reading a Prometheus exposition in tests: samples by (name, labels), and promtool's lint."""

from __future__ import annotations

import subprocess

from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.wait import scaled

Key = tuple[str, frozenset[tuple[str, str]]]
Samples = dict[Key, float]


def key(name: str, /, **labels: str) -> Key:
    return name, frozenset(labels.items())


def samples(text: str | bytes) -> Samples:
    """{(sample name, labels): value}, by prometheus_client's own parser; no series twice."""
    out: Samples = {}
    for family in text_string_to_metric_families(
        text.decode() if isinstance(text, bytes) else text
    ):
        for sample in family.samples:
            found = key(sample.name, **sample.labels)
            assert found not in out, f"duplicate series {found}"
            out[found] = sample.value
    return out


def value(found: Samples, name: str, /, **labels: str) -> float | None:
    """The sample with exactly these labels; None when there is none (absent, never 0)."""
    return found.get(key(name, **labels))


def names(found: Samples) -> set[str]:
    return {name for name, _ in found}


def promtool_problems(text: str | bytes) -> str:
    """What `promtool check metrics` says about the text; "" when it is clean."""
    result = subprocess.run(
        ["promtool", "check", "metrics"],
        input=text.encode() if isinstance(text, str) else text,
        capture_output=True,
        timeout=scaled(30),
        check=False,
    )
    said = (result.stdout + result.stderr).decode()
    return said or ("" if result.returncode == 0 else f"exit code {result.returncode}")
