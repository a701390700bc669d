"""`npumon analyze PATH [--top N] [--json] [--html FILE]`: a profile directory's analysis as
text or JSON, and as an HTML page (html.py)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from npumon.daemon.analysis.figures import (
    PERCENTILE_MIN_STEPS,
    PHASE_TITLES,
    distinct_links,
    findings_scope,
    not_judged,
    overlap,
    partition,
    percentiles,
    ranks_label,
)
from npumon.daemon.analysis.findings import transfer_tier
from npumon.daemon.model.profile import (
    AnalysisReport,
    ProfileSummary,
    Thresholds,
    report_json,
)
from npumon.daemon.nofollow import write_in

_COLUMNS = {"communication": "comm not overlapped", "other": "other"}  # short column heads


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f}"


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.1f}%"


def _steps(report: AnalysisReport) -> list[str]:
    s = report.summary
    if s.step is None:
        return ["Step time: no step table (step_trace_time.csv / step_trace_*.csv) found"]
    st = s.step
    who = report.scope.step_rank
    of = f" ({who})" if who and len(s.ranks) < 2 else ""
    if who and len(s.ranks) > 1:
        of = f" ({who}, the slowest of {len(s.ranks)} ranks)"
    quantiles = "  ".join(
        f"p{q} {_ms(v)}" if v is not None else f"p{q} - (needs {PERCENTILE_MIN_STEPS[q]} steps)"
        for q, v in percentiles(st)
    )
    parts = partition(s.phases, st.mean_seconds)
    phases = " + ".join(
        f"{PHASE_TITLES[name]} {_ms(sec)} ms ({_pct(sec / st.mean_seconds)})"
        for name, sec in parts
        if st.mean_seconds > 0
    )
    lines = [
        f"Step time{of} over {st.count} step(s), ms: mean {_ms(st.mean_seconds)}  {quantiles}",
        f"  = {phases} (mean per step)",
    ]
    split = overlap(s.phases)
    if split is not None:
        lines.append(
            f"  communication {_ms(split.total)} ms = {_ms(split.not_overlapped)} ms not "
            f"overlapped + {_ms(split.overlapped)} ms overlapped with compute (within computing)"
            if split.total is not None
            else f"  communication: {_ms(split.not_overlapped)} ms not overlapped; overlap "
            "unknown (the step table has no Overlapped column)"
        )
    return lines


def _ranks(s: ProfileSummary) -> list[str]:
    if not s.ranks:
        return []
    names = [n for n, _ in partition(s.ranks[0].phases, s.ranks[0].step_seconds)]
    header = f"  {'rank':<12}{'device':>7}{'steps':>6}{'step ms':>13}" + "".join(
        f"{_COLUMNS.get(n, PHASE_TITLES[n]):>22}" for n in names
    )
    lines = ["", "Per-rank step breakdown (ms, mean per step; the phases add up to the step):"]
    lines.append(header)
    for r in s.ranks:
        by_phase = dict(partition(r.phases, r.step_seconds))
        cells = "".join(f"{_ms(by_phase[n]) if n in by_phase else '-':>22}" for n in names)
        device = "-" if r.device_id is None else str(r.device_id)
        lines.append(f"  {r.rank:<12}{device:>7}{r.steps:>6}{_ms(r.step_seconds):>13}{cells}")
    for sp in s.rank_spread:
        mark = "  <-- above threshold among peers" if sp.flagged else ""
        lines.append(
            f"  spread of {sp.phase}: {_pct(sp.spread_ratio)} of the mean step of these ranks "
            f"(max {sp.slowest_rank}, min {sp.fastest_rank}){mark}"
        )
    return lines


def _ops(report: AnalysisReport) -> list[str]:
    s = report.summary
    if not s.op_time_ratio:
        return ["", "Operators: no operator table (op_statistic / kernel_details / op_summary)"]
    note = " (op types guessed from kernel names: Level0 data)" if s.op_types_inferred else ""
    who = ranks_label(report.scope.op_ranks)
    lines = [
        "",
        f"Top operators by time, {who} over the whole capture "
        f"(total {_ms(s.op_total_seconds)} ms){note}:",
        f"  {'op type':<32}{'core type':<16}{'count':>8}{'time ms':>13}{'share':>9}",
    ]
    for o in s.op_time_ratio:
        lines.append(
            f"  {o.op_type[:31]:<32}{o.core_type:<16}{o.count:>8}{_ms(o.seconds):>13}"
            f"{_pct(o.ratio):>9}"
        )
    own = [r for r in report.scope.ranks if r.op_total_seconds is not None]
    if len(own) > 1:
        lines.append(
            "  per rank: "
            + ", ".join(
                f"{r.rank} {_ms(r.op_total_seconds)} ms (top {r.ops[0].op_type})"
                if r.ops
                else f"{r.rank} {_ms(r.op_total_seconds)} ms"
                for r in own
            )
        )
    cores = ", ".join(f"{c.core_type} {_pct(c.ratio)}" for c in s.core_type_time_ratio)
    lines.append(f"  by core type: {cores or '-'}")
    ai_cpu = "-" if s.ai_cpu_count is None else f"{s.ai_cpu_count} ops, {_ms(s.ai_cpu_seconds)} ms"
    dynamic = "-" if s.dynamic_shape_op_count is None else str(s.dynamic_shape_op_count)
    lines.append(
        f"  AI CPU (>= 20 us): {ai_cpu};  format conversions: "
        f"{_ms(s.format_conversion_seconds)} ms ({_pct(s.format_conversion_ratio)});  "
        f"dynamic-shape ops: {dynamic}"
    )
    return lines


def _communication(report: AnalysisReport) -> list[str]:
    s = report.summary
    lines = []
    if s.communication:
        kinds = ", ".join(
            f"{c.collective} {_ms(c.seconds)} ms ({_pct(c.ratio)} of their step time)"
            for c in s.communication
        )
        who = ranks_label(report.scope.op_ranks)
        lines.append(
            f"Communication tasks (HCCL, not operator time), {who} over their captured steps: "
            f"{kinds}"
        )
    who = ranks_label(report.scope.comm_ranks)
    if s.comm_times is not None:
        t = s.comm_times
        lines.append(
            f"  communication.json, {who}: elapse {_ms(t.elapse_seconds)} ms = transit "
            f"{_ms(t.transit_seconds)} + wait {_ms(t.wait_seconds)} + idle "
            f"{_ms(t.idle_seconds)} ms"
        )
    if s.comm_transfer_ratio is not None:  # `npumon analyze` judges with the default thresholds
        lines.append("  " + transfer_tier(s.comm_transfer_ratio, Thresholds())[2:])
    links = distinct_links(s.links)
    if links:
        sdma = " (SDMA is these transfers: not counted again)" if len(links) < len(s.links) else ""
        lines.append(f"  bandwidth by link type, {who}{sdma}:")
    for link in links:
        bw = link.bandwidth_bytes_per_second
        lines.append(
            f"    {link.link_type:<6} {link.transit_bytes / 1e6:>10.1f} MB in "
            f"{_ms(link.transit_seconds)} ms: "
            f"{'-' if bw is None else f'{bw / 1e9:.1f} GB/s'}"
        )
    if len(s.peer_groups) > 1:
        groups = "; ".join(", ".join(g) for g in s.peer_groups)
        lines.append(f"Peer groups (data-parallel, from profiler_metadata.json): {groups}")
    return [""] + lines if lines else []


def _diagnosis(report: AnalysisReport) -> list[str]:
    s = report.summary
    withheld = [
        f"  not judged: {', '.join(kinds)}: {reason}." for kinds, reason in not_judged(s.not_judged)
    ]
    if not s.bottlenecks:
        return ["", "Diagnosis: no rule fired.", *withheld]
    scope = findings_scope(report)
    lines = ["", f"Diagnosis ({scope}):" if scope else "Diagnosis:"]
    for b in s.bottlenecks:
        lines.append(f"  [{b.kind}] {b.detail}")
        lines.append(f"      advice: {b.advice}")
    return lines + withheld


def format_report(report: AnalysisReport) -> str:
    """A readable report: step time, per-rank breakdown, top operators, diagnoses, problems."""
    s = report.summary
    mode = f", {s.mode} mode" if s.mode else ""
    lines = [
        f"Profile: {s.workload}  (layout {s.layout}{mode}, {len(report.sources)} table(s) read)"
    ]
    lines += _steps(report) + _ranks(s) + _ops(report) + _communication(report) + _diagnosis(report)
    if report.problems:
        lines += ["", "Problems:"] + [f"  {p}" for p in report.problems]
    return "\n".join(lines) + "\n"


def report_to_json(report: AnalysisReport) -> str:
    return report_json(report, indent=2).decode()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The one definition of `npumon analyze`'s arguments (cli.py builds its subparser here)."""
    parser.add_argument("path", type=Path, help="a PROF_* dir, a *_ascend_pt dir, or a parent")
    parser.add_argument("--json", action="store_true", help="print the analysis as JSON")
    parser.add_argument("--top", type=int, default=10, help="operator types to list (default 10)")
    parser.add_argument(
        "--against",
        type=Path,
        metavar="REFERENCE",
        help="also print what changed against another profile (ms per step, largest first)",
    )
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write the report as one self-contained HTML page (charts, opens offline)",
    )


def run(args: argparse.Namespace) -> int:
    """`npumon analyze`: 0 on success, 2 when PATH holds no usable profile data."""
    from npumon.daemon.analysis.analysis import NoProfileData, analyze_path

    if not args.path.exists():
        print(f"npumon analyze: {args.path}: no such file or directory", file=sys.stderr)
        return 2
    from npumon.daemon.analysis.deltas import compare, format_comparison

    against = getattr(args, "against", None)
    if against is not None and not against.exists():
        print(f"npumon analyze: {against}: no such file or directory", file=sys.stderr)
        return 2
    try:
        report = analyze_path(args.path, top_n=args.top)
        if against is not None:
            reference = analyze_path(against, top_n=args.top)
            report = replace(
                report,
                comparison=compare(report.summary, reference.summary, str(against.resolve())),
            )
    except NoProfileData as exc:
        print(f"npumon analyze: {exc}", file=sys.stderr)
        return 2
    if args.html is not None:
        from npumon.daemon.analysis.html import render

        try:
            write_whole(args.html, render(report, capture=str(args.path.resolve())))
        except OSError as exc:
            print(f"npumon analyze: cannot write {args.html}: {exc}", file=sys.stderr)
            return 1
    sys.stdout.write(report_to_json(report) + "\n" if args.json else format_report(report))
    if report.comparison is not None and not args.json:
        sys.stdout.write(f"\nAgainst {against}:\n" + format_comparison(report.comparison))
    return 0


def write_whole(path: Path, text: str) -> None:
    """Write to a new temporary file beside ``path``, then rename: a reader never sees half,
    and no link at either name is written through (nofollow.write_in; a link in ``path``'s
    folder names is the caller's choice, resolved first)."""
    write_in(Path(os.path.realpath(path.parent)), path.name, text.encode("utf-8"))
