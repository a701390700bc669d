"""Every label of every family has a documented bound (docs/labels.md), checked on a worst-case
node: the fixture nodes' expositions (real layouts, the A3's 16 dies and its interconnect), 64
chips each with the most processes and an owner, compat names on, and profiling.max_workloads
workloads each with more ranks and op types than are kept."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from npumon.daemon.config import Config
from npumon.daemon.model.kubelet import ChipOwner, ProcessOwner
from npumon.daemon.model.profile import (
    BOTTLENECK_KINDS,
    Bottleneck,
    CommShare,
    CoreShare,
    LinkStat,
    OpShare,
    PhaseStat,
    ProfileSummary,
    ProfilingView,
    RankBreakdown,
    StepStats,
    WorkloadProfile,
)
from npumon.daemon.model.reading import ProcessReading
from npumon.daemon.profiling.steplog import READ_RESULTS
from npumon.exporters.profiles import LINK_TYPES
from tests.exporters.exp_helpers import chip_910b, merged, node, render, table_chip
from tests.support import FIXTURES, ROOT

Values = dict[tuple[str, str], set[str]]  # (family, label) -> values on one node


def documented() -> dict[str, int]:
    """label -> bound, from the table's rows (first column: the labels, third: the bound)."""
    bounds: dict[str, int] = {}
    text = (ROOT / "docs" / "labels.md").read_text()
    for labels, bound in re.findall(r"^\| (`.+?`) \| .+? \| (\d+) \|", text, re.MULTILINE):
        for label in re.findall(r"`([a-zA-Z_]+)`", labels):
            bounds[label] = max(bounds.get(label, 0), int(bound))
    return bounds


def values(text: str) -> Values:
    found: Values = defaultdict(set)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            for label, value in sample.labels.items():
                found[(family.name, label)].add(value)
    return found


def worst_chips() -> str:
    """64 chips (16 NPUs x 4), each with max_processes_per_chip processes and an owner."""
    limit = Config().chips.max_processes_per_chip
    base = chip_910b()
    chips = []
    for npu in range(16):
        for chip in range(4):
            table = replace(base.table, npu=npu, chip=chip, bus_id=f"0000:{npu:02X}:0{chip}.0")
            reading = merged(replace(base, table=table))
            owner = ProcessOwner("team", f"job-{npu}-{chip}", "trainer", "root", f"{npu}{chip}")
            processes = tuple(
                ProcessReading(10_000 * npu + 100 * chip + i, 1 << 30, f"worker{i}", "c1", owner)
                for i in range(limit)
            )
            owners = (ChipOwner("team", f"job-{npu}-{chip}", "trainer", vnpu_id=chip),)
            chips.append(replace(reading, processes=processes, owners=owners, allocated=True))
    assert table_chip  # the kit's builders, one chip at a time
    return render(node(*chips), enabled=("npu_exporter_compat",)).decode()


def worst_profiles() -> str:
    """max_workloads workloads of 40 ranks and 30 op types, every kind of every list."""
    settings = Config().profiling
    phases = tuple(PhaseStat(p, 0.1, 0.25) for p in ("computing", "communication", "free"))
    ranks = tuple(RankBreakdown(f"rank{r}", r % 16, 50, 0.4 + r / 1000, phases) for r in range(40))
    ops = tuple(OpShare(f"Op{i}", "ai_core", 0.01, 0.01, 3) for i in range(30))
    summary = ProfileSummary(
        workload="",
        layout="torch_npu",
        capture_time_seconds=None,
        step=StepStats(50, 0.4, 0.4, 0.41, 0.42),
        phases=phases,
        op_total_seconds=1.0,
        op_time_ratio=ops[: settings.top_n] + (OpShare("other", "ai_core", 0.1, 0.1, 20),),
        core_type_time_ratio=(CoreShare("ai_core", 0.5, 0.5), CoreShare("mix", 0.5, 0.5)),
        ai_cpu_seconds=None,
        ai_cpu_count=None,
        format_conversion_seconds=None,
        format_conversion_ratio=None,
        dynamic_shape_op_count=None,
        op_types_inferred=False,
        ranks=ranks,
        rank_spread=(),
        bottlenecks=tuple(Bottleneck(k, "", "", 1.0, 0.5) for k in BOTTLENECK_KINDS),
        communication=tuple(CommShare(c, 0.1, 0.1, 4) for c in ("all_reduce", "all_gather")),
        links=tuple(LinkStat(t, 1e9, 0.1, 1e10) for t in sorted(LINK_TYPES)),
    )
    workloads = tuple(
        WorkloadProfile(
            f"job{w}",
            replace(summary, workload=f"job{w}"),
            0.4,
            1.0,
            2.0,
            0.03,
            True,
            False,
            capture_inflation_ratio=1.1,
        )
        for w in range(settings.max_workloads)
    )
    reads = tuple((r, 1) for r in READ_RESULTS)
    snap = replace(node(), profiles=ProfilingView(workloads=workloads, step_log_reads=reads))
    return render(snap).decode()


def nodes() -> dict[str, str]:
    found = {  # the goldens stand durations in as <duration> (tests/e2e/test_golden.py)
        path.parent.name: re.sub(r" <\w+>$", " 0", path.read_text(), flags=re.MULTILINE)
        for path in sorted((FIXTURES / "nodes").glob("*/expected.prom"))
    }
    found["64 chips, processes, owners, compat"] = worst_chips()
    found["16 workloads"] = worst_profiles()
    return found


def test_every_label_has_a_bound_and_keeps_within_it() -> None:
    bounds = documented()
    seen: set[str] = set()
    over: list[str] = []
    for name, text in nodes().items():
        for (family, label), found in values(text).items():
            seen.add(label)
            if label in bounds and len(found) > bounds[label]:
                over.append(f"{name}: {family}{{{label}}} has {len(found)} > {bounds[label]}")
    assert sorted(seen - set(bounds)) == [], "labels without a row in docs/labels.md"
    assert over == []
    # the worst case reached what it is built to reach
    ranks = values(nodes()["16 workloads"])[("npu_rank_step_duration_seconds", "rank")]
    assert len(ranks) == 16  # 40 ranks, the 16 slowest kept (the same 16 in every workload)
