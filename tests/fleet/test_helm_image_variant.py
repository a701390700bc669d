"""The chart runs the profiling image variant (`make image`: <tag>-profiling, the analysis
worker's pandas and numpy) exactly when npumon's profiling is enabled; the default image has
neither (Dockerfile, VARIANT)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from chart_render import CHART, container, render

DIGEST = "sha256:" + "0123456789abcdef" * 4
PROFILING_DIGEST = "sha256:" + "fedcba9876543210" * 4
PROFILING = {"config": {"profiling": {"enabled": True}}}


def app_version() -> str:
    return str(yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"])


@pytest.mark.parametrize(
    ("values", "reference"),
    [
        ({}, "npumon:{app}"),
        ({"config": {"profiling": {"enabled": False}}}, "npumon:{app}"),
        (PROFILING, "npumon:{app}-profiling"),
        ({**PROFILING, "image": {"tag": "0.2.0"}}, "npumon:0.2.0-profiling"),
        (
            {**PROFILING, "image": {"tag": "0.2.0", "profilingTagSuffix": "-full"}},
            "npumon:0.2.0-full",
        ),
        (
            {**PROFILING, "image": {"digest": DIGEST, "profilingDigest": PROFILING_DIGEST}},
            f"npumon@{PROFILING_DIGEST}",
        ),
        ({"image": {"digest": DIGEST, "profilingDigest": PROFILING_DIGEST}}, f"npumon@{DIGEST}"),
    ],
    ids=["default", "off", "on", "on-tag", "on-suffix", "on-digest", "off-digest"],
)
def test_the_profiling_variant_runs_when_profiling_is_on(
    values: dict[str, Any], reference: str
) -> None:
    assert container(render(values))["image"] == reference.format(app=app_version())


def test_a_pinned_digest_with_profiling_needs_the_variants_digest() -> None:
    with pytest.raises(Exception, match="image.profilingDigest"):
        render({**PROFILING, "image": {"digest": DIGEST}})
