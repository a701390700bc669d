"""Every finding has a size (the time per step at stake and how it was computed), findings come
largest first, and the phases without a parent partition the step: on the real exports
(tests/fixtures/msprof/trees, see SOURCES.md)."""

from __future__ import annotations

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.model.profile import ProfileSummary

TREES = sorted(p.name for p in (FIXTURES / "trees").iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def summaries() -> dict[str, ProfileSummary]:
    found = {}
    for tree in TREES:
        try:
            found[tree] = analyze_path(FIXTURES / "trees" / tree).summary
        except Exception:  # a tree kept for its failure (prof_not_exported): no summary
            continue
    return found


def test_every_finding_is_sized_and_the_largest_comes_first(
    summaries: dict[str, ProfileSummary],
) -> None:
    findings = [b for s in summaries.values() for b in s.bottlenecks]
    assert findings, "the real exports have findings"
    measured = 0
    for s in summaries.values():
        sizes = []
        for b in s.bottlenecks:
            assert b.size is not None and b.size.how, (s.workload, b.kind)
            seconds = b.size.seconds_per_step
            if seconds is not None:
                measured += 1
                assert seconds >= 0
                if s.step is not None and b.size.share_of_step is not None:
                    assert b.size.share_of_step <= 1.0 + 1e-9
            sizes.append(-1.0 if seconds is None else seconds)
        measured_first = [v for v in sizes if v >= 0]
        assert measured_first == sorted(measured_first, reverse=True)
        assert sizes == measured_first + [-1.0] * (len(sizes) - len(measured_first))
    assert measured > 0


def test_the_phases_without_a_parent_sum_to_the_step(summaries: dict[str, ProfileSummary]) -> None:
    checked = 0
    for tree, s in summaries.items():
        names = {p.phase for p in s.phases}
        if s.step is None or "computing" not in names:
            continue
        top = [p for p in s.phases if p.within is None]
        assert sum(p.seconds for p in top) == pytest.approx(s.step.mean_seconds, rel=0.01), tree
        for p in s.phases:
            if p.phase == "preparing":
                assert p.within == "free", tree
        checked += 1
    assert checked > 0
