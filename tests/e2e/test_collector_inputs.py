"""Each collector's declared inputs (COLLECTORS) are all it reads: the text it keeps while they
are unchanged is the text it would render again. Checked on real fixture nodes, two at a time:
a snapshot built from node B with A's inputs for one collector renders exactly as A does."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.exporters.collector import COLLECTORS
from tests.support import fixture_agent

PAIRS = (
    ("a3_interconnect_replay", "910a_24.1rc2_procs"),
    ("910a_24.1rc2_procs", "a3_interconnect_replay"),
    ("310p3duo_25.3rc1", "910b4-1_25.2.2"),
)


@cache
def snapshot(node: str) -> NodeSnapshot:
    agent = fixture_agent(node)
    agent.collect_once()
    latest: NodeSnapshot = agent.store.latest()
    return latest


def with_inputs(base: NodeSnapshot, donor: NodeSnapshot, paths: tuple[str, ...]) -> NodeSnapshot:
    """``base`` with the parts named by ``paths`` taken from ``donor``."""
    for path in paths:
        if not path:
            return donor
        head, _, tail = path.partition(".")
        if tail:
            part = replace(getattr(base, head), **{tail: getattr(getattr(donor, head), tail)})
            base = replace(base, **{head: part})
        else:
            base = replace(base, **{head: getattr(donor, head)})
    return base


def text(snap: NodeSnapshot, name: str) -> bytes:
    (collector,) = (c for c in COLLECTORS if c.name == name)
    return collector.render(snap, False)


@pytest.mark.parametrize(("a", "b"), PAIRS)
@pytest.mark.parametrize(("name", "paths"), [(c.name, c.inputs) for c in COLLECTORS])
def test_a_collector_reads_only_its_inputs(
    a: str, b: str, name: str, paths: tuple[str, ...]
) -> None:
    first, second = snapshot(a), snapshot(b)
    mixed = with_inputs(second, first, paths)
    assert text(mixed, name) == text(first, name)


def test_the_pairs_differ_where_the_inputs_are() -> None:
    # the check above means something only where the two nodes differ in that part
    first, second = snapshot(PAIRS[0][0]), snapshot(PAIRS[0][1])
    for part in ("chips", "node", "sources", "network"):
        assert getattr(first, part) != getattr(second, part), part
    assert text(first, "interconnect") != text(second, "interconnect")
    assert text(first, "network") != text(second, "network")
