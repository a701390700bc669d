"""One analysis as a self-contained HTML page: inline SVG charts drawn here, inline CSS, no
script, and a Content-Security-Policy that lets the page load nothing (it opens offline, and a
browser refuses any request it might make)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

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
from npumon.daemon.analysis.verdict import Sized, Wait, reference_ratio, sized, wait
from npumon.daemon.model.capture_info import SOURCE_SAID, CaptureInfo
from npumon.daemon.model.profile import (
    AnalysisReport,
    LinkStat,
    OpShare,
    RankBreakdown,
    RankDetail,
    Thresholds,
)

CSP = "default-src 'none'; style-src 'unsafe-inline'"
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
PHASE_COLOURS = {
    "computing": "#4e79a7",
    "communication": "#e15759",
    "preparing": "#edc948",
    "free": "#bab0ac",
    "fp_bp": "#4e79a7",
    "iteration_refresh": "#76b7b2",
    "data_aug": "#edc948",
    "other": "#9c755f",
}
OPEN_IN_INSIGHT = (
    "To open it in MindStudio Insight: copy this directory to the machine that runs Insight, "
    "click Import Data (upper left), select the directory and click OK (a single rank's "
    "*_ascend_pt or PROF_* folder, or the parent of all ranks for the cluster views)."
)
_WIDTH = 760
_LEFT = 190  # label column of the bar charts
ALL_RANKS_UP_TO = 8  # beyond this many ranks a chart draws the slowest and the fastest only
TABLE_RANKS_UP_TO = 16  # beyond this many, tables list the slowest and the fastest ranks
_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:16px auto;max-width:1360px;padding:0 16px;
color:#222}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:14px 0 4px}.note{color:#555;font-size:12px}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
td,th{padding:2px 8px;text-align:right;border-bottom:1px solid #eee}
td:first-child,th:first-child{text-align:left}
.finding{border-left:4px solid #e15759;padding:4px 10px;margin:10px 0;background:#fafafa}
.finding b{font-family:monospace}.advice{color:#333}
svg text{font:11px system-ui,sans-serif;fill:#333}
code{font-size:12px;background:#f3f3f3;padding:1px 4px;word-break:break-all}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
.verdict{border:2px solid #e15759;border-radius:6px;padding:10px 16px;margin:10px 0;
background:#fff8f7}
.verdict.ok{border-color:#59a14f;background:#f6fbf5}.verdict .what{font-size:19px;font-weight:600}
.verdict .size{font-size:19px;color:#c0392b}.verdict ul{margin:4px 0 0;padding-left:20px}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:24px}.pair svg{max-width:100%;height:auto}
.withheld{border-left:4px solid #999;padding:4px 10px;margin:10px 0;background:#f4f4f4}
.cause{margin:2px 0}.cause a{color:#2a5d9f}
"""


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:,.3f}"


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.1f}%"


def _label(rank: str, width: int = 26) -> str:
    """A rank's name for a bar's label column: its end when long (a PROF_*/device_N path),
    the whole name in the bar's tooltip."""
    text = rank if len(rank) <= width else "…" + rank[-(width - 1) :]
    return f"{escape(text)}<title>{escape(rank)}</title>"


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _legend(items: Sequence[tuple[str, str]]) -> str:
    return (
        '<div class="legend">'
        + "".join(f'<span><i style="background:{c}"></i>{escape(t)}</span>' for t, c in items)
        + "</div>"
    )


def _svg(height: int, body: str, title: str) -> str:
    return (
        f'<svg role="img" aria-label="{escape(title)}" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>{body}</svg>"
    )


def _nice_max(value: float) -> float:
    """A round axis top at or above value (1, 2, 2.5, 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** int(f"{value:e}".split("e")[1])
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def extremes(ranks: Sequence[RankBreakdown]) -> list[RankBreakdown]:
    """All ranks when few, else the slowest and the fastest (by mean step)."""
    if len(ranks) <= ALL_RANKS_UP_TO:
        return list(ranks)
    slow = max(ranks, key=lambda r: r.step_seconds)
    fast = min(ranks, key=lambda r: r.step_seconds)
    return [slow, fast] if slow.rank != fast.rank else [slow]


def _timeline(report: AnalysisReport, baseline: float | None, t: Thresholds) -> str:
    shown = {r.rank for r in extremes(report.summary.ranks)} or None
    ranks = [r for r in report.scope.ranks if r.steps and (shown is None or r.rank in shown)]
    if not ranks:
        return "<p>No step table: no step timeline.</p>"
    if max(len(r.steps) for r in ranks) < 3:
        return (
            '<p class="note">One or two steps per rank captured: no timeline (each rank\'s '
            "step is in the table above and the heatmap).</p>"
        )
    height, top, bottom, left, right = 220, 14, 40, 60, 16
    points = [p for r in ranks for p in r.steps]
    high = max(p.seconds for p in points)
    if baseline is not None:
        high = max(high, baseline * (1 + t.regression_ratio))
    y_max = _nice_max(high * 1e3)
    count = max(len(r.steps) for r in ranks)
    plot_w, plot_h = _WIDTH - left - right, height - top - bottom

    def x(i: int, nudge: float = 0.0) -> float:  # nudge: ranks side by side at one step
        return left + (plot_w * (i + 0.5) / count) + nudge

    def y(seconds: float) -> float:
        return top + plot_h * (1 - seconds * 1e3 / y_max)

    body = []
    for k in range(6):
        value = y_max * k / 5
        yy = top + plot_h * (1 - k / 5)
        body.append(
            f'<line x1="{left}" x2="{_WIDTH - right}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eee"/>'
            f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{value:g}</text>'
        )
    if baseline is not None:
        upper = baseline * (1 + t.regression_ratio)
        body.append(
            f'<line class="reference" x1="{left}" x2="{_WIDTH - right}" y1="{y(baseline):.1f}" '
            f'y2="{y(baseline):.1f}" stroke="#59a14f" stroke-width="2"/>'
            f'<line class="regression" x1="{left}" x2="{_WIDTH - right}" y1="{y(upper):.1f}" '
            f'y2="{y(upper):.1f}" stroke="#e15759" stroke-dasharray="5 3"/>'
        )
    for n, rank in enumerate(ranks):
        colour = _colour(n)
        nudge = (n - (len(ranks) - 1) / 2) * min(4.0, plot_w / count / (len(ranks) + 1))
        path = " ".join(f"{x(i, nudge):.1f},{y(p.seconds):.1f}" for i, p in enumerate(rank.steps))
        body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        for i, p in enumerate(rank.steps):
            fill = colour if p.counted else "#fff"
            name = "step" if p.step is None else f"step {p.step}"
            left_out = "" if p.counted else " (warm-up or partial: not in the statistics)"
            body.append(
                f'<circle cx="{x(i, nudge):.1f}" cy="{y(p.seconds):.1f}" r="3.5" fill="{fill}" '
                f'stroke="{colour}"><title>{escape(rank.rank)} {name}: {_ms(p.seconds)} ms'
                f"{left_out}</title></circle>"
            )
    labels = max(ranks, key=lambda r: len(r.steps)).steps
    every = max(1, count // 12)
    for i, p in enumerate(labels):
        if i % every == 0:
            text = str(i + 1) if p.step is None else str(p.step)
            yy = height - bottom + 14
            body.append(f'<text x="{x(i):.1f}" y="{yy}" text-anchor="middle">{text}</text>')
    body.append(
        f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">step</text>'
        f'<text x="14" y="{top + plot_h / 2}" transform="rotate(-90 14 {top + plot_h / 2})" '
        'text-anchor="middle">ms</text>'
    )
    legend = [(r.rank, _colour(n)) for n, r in enumerate(ranks)]
    if baseline is not None:
        legend.append((f"reference: the workload's median step {_ms(baseline)} ms", "#59a14f"))
        legend.append(
            (
                f"regression above +{t.regression_ratio:.0%} "
                f"({_ms(baseline * (1 + t.regression_ratio))} ms)",
                "#e15759",
            )
        )
    many = len(report.summary.ranks) > len(ranks)
    which = " The slowest and the fastest rank are drawn." if many else ""
    return (
        _svg(height, "".join(body), "Step time per rank")
        + _legend(legend)
        + '<p class="note">Filled points are the steps the statistics count; hollow ones are '
        f"warm-up or partial steps, left out.{which}</p>"
    )


def _stats_table(report: AnalysisReport) -> str:
    s = report.summary
    if s.step is None:
        return "<p>No step table (step_trace_time.csv / step_trace_*.csv) found.</p>"
    cells = "".join(
        f"<td>{_ms(v)}</td>" if v is not None else f"<td>- (needs {PERCENTILE_MIN_STEPS[q]})</td>"
        for q, v in percentiles(s.step)
    )
    who = report.scope.step_rank or "-"
    slowest = " (the slowest)" if len(s.ranks) > 1 else ""
    return (
        "<table><tr><th>rank</th><th>steps</th><th>mean ms</th><th>p50</th>"
        f"<th>p90</th><th>p99</th></tr><tr><td>{escape(who)}{slowest}</td><td>{s.step.count}</td>"
        f"<td>{_ms(s.step.mean_seconds)}</td>{cells}</tr></table>"
    )


def _phases(all_ranks: Sequence[RankBreakdown]) -> str:
    if not all_ranks:
        return "<p>No step table: no phases.</p>"
    ranks = extremes(all_ranks)
    row_h, top = 26, 8
    scale = max(r.step_seconds for r in ranks) or 1.0
    width = _WIDTH - _LEFT - 90
    body, seen = [], {}
    for n, rank in enumerate(ranks):
        yy = top + n * row_h
        body.append(
            f'<text x="{_LEFT - 6}" y="{yy + 15}" text-anchor="end">{_label(rank.rank)}</text>'
        )
        xx = float(_LEFT)
        for name, seconds in partition(rank.phases, rank.step_seconds):
            w = width * seconds / scale
            colour = PHASE_COLOURS.get(name, "#999")
            seen[PHASE_TITLES[name]] = colour
            share = seconds / rank.step_seconds if rank.step_seconds else 0.0
            body.append(
                f'<rect class="phase" x="{xx:.1f}" y="{yy + 3}" width="{max(w, 0):.1f}" '
                f'height="{row_h - 8}" fill="{colour}"><title>{escape(rank.rank)} '
                f"{escape(PHASE_TITLES[name])}: {_ms(seconds)} ms ({_pct(share)})</title></rect>"
            )
            xx += w
        body.append(f'<text x="{xx + 6:.1f}" y="{yy + 15}">{_ms(rank.step_seconds)} ms</text>')
    height = top + len(ranks) * row_h + 4
    return _svg(height, "".join(body), "Phases per rank") + _legend(list(seen.items()))


def _heatmap(ranks: Sequence[RankBreakdown]) -> str:
    """Every rank at a glance: a column per rank, a row for the step and each phase, the colour
    from the row's least (light) to its most (dark); the value in each cell's tooltip."""
    if len(ranks) < 2:
        return ""
    rows: list[tuple[str, list[float | None]]] = [("step", [r.step_seconds for r in ranks])]
    names: list[str] = []
    for r in ranks:
        for name, _ in partition(r.phases, r.step_seconds):
            if name not in names:
                names.append(name)
    for name in names:
        rows.append(
            (
                PHASE_TITLES[name],
                [dict(partition(r.phases, r.step_seconds)).get(name) for r in ranks],
            )
        )
    row_h, top, left = 22, 4, _LEFT
    width = _WIDTH - left - 150  # the row's range on the right
    cell = width / len(ranks)
    body = []
    for n, (title, values) in enumerate(rows):
        yy = top + n * row_h
        known = [v for v in values if v is not None]
        low, high = (min(known), max(known)) if known else (0.0, 0.0)
        body.append(
            f'<text x="{left - 6}" y="{yy + 15}" text-anchor="end">{escape(title)}</text>'
            f'<text x="{left + width + 8}" y="{yy + 15}">{_ms(low)} to {_ms(high)} ms</text>'
        )
        for i, (rank, v) in enumerate(zip(ranks, values, strict=True)):
            if v is None:
                continue
            level = 0.5 if high <= low else (v - low) / (high - low)
            shade = int(235 - 190 * level)
            body.append(
                f'<rect class="heat" x="{left + i * cell:.1f}" y="{yy + 2}" '
                f'width="{max(cell - (1 if cell > 4 else 0), 0.5):.1f}" height="{row_h - 4}" '
                f'fill="rgb({shade},{shade + 10 if shade < 245 else 255},255)">'
                f"<title>{escape(rank.rank)} {escape(title)}: {_ms(v)} ms</title></rect>"
            )
    yy = top + len(rows) * row_h + 12
    if cell >= 40:  # room for each rank's name under its column
        for i, rank in enumerate(ranks):
            label = rank.rank if len(rank.rank) <= 8 else "…" + rank.rank[-7:]
            body.append(
                f'<text x="{left + (i + 0.5) * cell:.1f}" y="{yy}" text-anchor="middle">'
                f"{escape(label)}</text>"
            )
    else:
        body.append(
            f'<text x="{left}" y="{yy}">{escape(ranks[0].rank)}</text><text '
            f'x="{left + width}" y="{yy}" text-anchor="end">{escape(ranks[-1].rank)}</text>'
        )
    return _svg(yy + 6, "".join(body), "Ranks heatmap") + (
        '<p class="note">Each row from its least (light) to its most (dark) time per step; '
        "hover a cell for its figure.</p>"
    )


def _op_bars(rank: str, ops: Sequence[OpShare]) -> str:
    shown = [o for o in ops if o.op_type != "other"]
    if not shown:
        return ""
    row_h, top = 18, 4
    scale = max(o.seconds for o in shown) or 1.0
    width = _WIDTH - _LEFT - 130
    body = []
    for n, o in enumerate(shown):
        yy = top + n * row_h
        label = o.op_type if len(o.op_type) <= 30 else o.op_type[:29] + "…"
        body.append(
            f'<text x="{_LEFT - 6}" y="{yy + 12}" text-anchor="end">{escape(label)}</text>'
            f'<rect class="op" x="{_LEFT}" y="{yy + 2}" width="{width * o.seconds / scale:.1f}" '
            f'height="{row_h - 5}" fill="{_colour(n)}"><title>{escape(o.op_type)} '
            f"({escape(o.core_type)}): {_ms(o.seconds)} ms, {o.count} calls</title></rect>"
            f'<text x="{_LEFT + width * o.seconds / scale + 6:.1f}" y="{yy + 12}">'
            f"{_ms(o.seconds)} ms ({_pct(o.ratio)})</text>"
        )
    return _svg(top + len(shown) * row_h + 4, "".join(body), f"Top operators of {rank}")


def _operators(report: AnalysisReport) -> str:
    s = report.summary
    own = [r for r in report.scope.ranks if r.ops]
    if not own and not s.op_time_ratio:
        return "<p>No operator table (op_statistic / kernel_details / op_summary).</p>"
    note = (
        '<p class="note">Op types guessed from kernel names (Level0 data).</p>'
        if s.op_types_inferred
        else ""
    )
    parts = [note]
    if not own:  # a report without per-rank figures: the summed table, labelled
        own = [
            RankDetail(
                ranks_label(report.scope.op_ranks), (), s.op_total_seconds, s.op_time_ratio, ()
            )
        ]
    if len(own) > 2:  # the slowest and the fastest of the ranks with an operator table
        step = {r.rank: r.step_seconds for r in s.ranks}
        own.sort(key=lambda r: step.get(r.rank, 0.0), reverse=True)
        parts.append(
            f'<p class="note">{len(own)} ranks have an operator table: the slowest and the '
            "fastest are shown.</p>"
        )
        own = [own[0], own[-1]]
    columns = []
    for rank in own:
        column = [
            f"<h3>{escape(rank.rank)}: {_ms(rank.op_total_seconds)} ms of operator time over "
            "its whole capture</h3>",
            _op_bars(rank.rank, rank.ops),
        ]
        rest = next((o for o in rank.ops if o.op_type == "other"), None)
        if rest is not None:
            column.append(
                f'<p class="note">other op types: {_ms(rest.seconds)} ms ({_pct(rest.ratio)})</p>'
            )
        columns.append("<div>" + "".join(column) + "</div>")
    parts.append(
        '<div class="pair">' + "".join(columns) + "</div>" if len(columns) > 1 else "".join(columns)
    )
    if s.core_type_time_ratio:
        cores = ", ".join(f"{c.core_type} {_pct(c.ratio)}" for c in s.core_type_time_ratio)
        parts.append(
            f"<p>By core type, {escape(ranks_label(report.scope.op_ranks))}: {escape(cores)}</p>"
        )
    return "".join(parts)


def _overlap(report: AnalysisReport) -> str:
    """Per rank, from its step table: communication per step, split into what no computing hid
    (Communication(Not Overlapped), the communication phase) and what ran while the device
    computed (Overlapped, inside computing). A table without Overlapped draws the not overlapped
    part alone and says the overlap is unknown."""
    rows = [(r.rank, split) for r in extremes(report.summary.ranks) if (split := overlap(r.phases))]
    s = report.summary
    if not rows:
        if s.communication or s.comm_times is not None:
            return (
                '<p class="note">Overlap with compute unknown: this profile\'s step table does '
                "not split communication into overlapped and not overlapped.</p>"
            )
        return ""
    row_h, top = 26, 8
    scale = max(split.total or split.not_overlapped for _, split in rows) or 1.0
    width = _WIDTH - _LEFT - 300
    body = []
    for n, (rank, split) in enumerate(rows):
        yy = top + n * row_h
        exposed, hidden = split.not_overlapped, split.overlapped or 0.0
        w_exposed, w_hidden = width * exposed / scale, width * hidden / scale
        total = split.total
        text = (
            f"{_ms(total)} ms per step, {_pct(exposed / total if total else None)} not overlapped"
            if total is not None
            else f"{_ms(exposed)} ms not overlapped; overlap unknown"
        )
        body.append(
            f'<text x="{_LEFT - 6}" y="{yy + 15}" text-anchor="end">{_label(rank)}</text>'
            f'<rect class="comm" x="{_LEFT}" y="{yy + 3}" width="{w_exposed:.1f}" '
            f'height="{row_h - 8}" fill="#e15759"><title>{escape(rank)}: not overlapped '
            f"{_ms(exposed)} ms per step</title></rect>"
        )
        if split.overlapped is not None:
            body.append(
                f'<rect class="comm" x="{_LEFT + w_exposed:.1f}" y="{yy + 3}" '
                f'width="{w_hidden:.1f}" height="{row_h - 8}" fill="#76b7b2"><title>'
                f"{escape(rank)}: overlapped with compute {_ms(hidden)} ms per step</title></rect>"
            )
        body.append(f'<text x="{_LEFT + w_exposed + w_hidden + 6:.1f}" y="{yy + 15}">{text}</text>')
    svg = _svg(top + len(rows) * row_h + 4, "".join(body), "Communication overlap per rank")
    unknown = [rank for rank, split in rows if split.overlapped is None]
    some = (
        f" The slowest and the fastest of {len(report.summary.ranks)} ranks; all in the JSON."
        if len(rows) < len(report.summary.ranks)
        else ""
    )
    figures = "".join(
        f"<tr><td>{escape(rank)}</td><td>{_ms(split.total)}</td>"
        f"<td>{_ms(split.not_overlapped)}</td><td>{_ms(split.overlapped)}</td></tr>"
        for rank, split in rows
    )
    return (
        "<h3>Communication overlapped with compute or not (step table, mean per step)</h3>"
        + svg
        + _legend([("not overlapped", "#e15759"), ("overlapped with compute", "#76b7b2")])
        + "<table><tr><th>rank</th><th>communication ms</th><th>not overlapped ms</th>"
        f"<th>overlapped ms</th></tr>{figures}</table>"
        + '<p class="note">Not overlapped: the step table\'s Communication(Not Overlapped), the '
        "communication phase of the step, what the step pays for. Overlapped: its Overlapped, "
        "communication that ran while the device computed (inside computing, hidden). The HCCL "
        f"task time per collective counts both.{some}</p>"
        + (
            f'<p class="note">Overlap unknown for {escape(", ".join(unknown))}: the step table '
            "has no Overlapped column; only its communication not overlapped is drawn.</p>"
            if unknown
            else ""
        )
    )


def _communication(report: AnalysisReport, t: Thresholds) -> str:
    s = report.summary
    parts = []
    per_rank = [r for r in report.scope.ranks if r.communication]
    left_out = 0
    if len(per_rank) > TABLE_RANKS_UP_TO:
        step = {r.rank: r.step_seconds for r in s.ranks}
        ordered = sorted(per_rank, key=lambda r: step.get(r.rank, 0.0), reverse=True)
        left_out = len(per_rank) - 2
        per_rank = [ordered[0], ordered[-1]]
    if per_rank:
        kinds = sorted({c.collective for r in per_rank for c in r.communication})
        head = "".join(f"<th>{escape(k)} ms</th>" for k in kinds)
        body = ""
        for r in per_rank:
            of = {c.collective: c for c in r.communication}
            cells = "".join(
                f"<td>{_ms(of[k].seconds)} ({of[k].count}×, {_pct(of[k].ratio)})</td>"
                if k in of
                else "<td>-</td>"
                for k in kinds
            )
            body += f"<tr><td>{escape(r.rank)}</td>{cells}</tr>"
        parts.append(
            "<h3>Per collective: HCCL task time over each rank's captured steps "
            "(calls, share of its step time)</h3>"
            f"<table><tr><th>rank</th>{head}</tr>{body}</table>"
        )
        if left_out:
            parts.append(
                f'<p class="note">The slowest and the fastest rank; {left_out} more in the '
                "JSON.</p>"
            )
    elif s.communication:
        summed = ", ".join(f"{c.collective} {_ms(c.seconds)} ms" for c in s.communication)
        parts.append(f"<p>{escape(ranks_label(report.scope.op_ranks))}: {escape(summed)}</p>")
    parts.append(_overlap(report))
    who = escape(ranks_label(report.scope.comm_ranks))
    if s.comm_times is not None:
        c = s.comm_times
        parts.append(
            f"<p>communication.json, {who}: elapse {_ms(c.elapse_seconds)} ms = transit "
            f"{_ms(c.transit_seconds)} + wait {_ms(c.wait_seconds)} + idle "
            f"{_ms(c.idle_seconds)} ms</p>"
        )
    links = [x for x in distinct_links(s.links) if x.bandwidth_bytes_per_second is not None]
    if links:
        parts.append(f"<h3>Bandwidth per link type, {who}</h3>" + _link_bars(links, t))
        if len(distinct_links(s.links)) < len(s.links):
            parts.append(
                '<p class="note">SDMA is the sum of HCCS, PCIE and SIO transfers: not drawn '
                "again.</p>"
            )
    return "".join(parts) or (
        "<p>No communication table in this capture (communication.json, or HCCL tasks in the "
        "operator table); the step table's communication not overlapped is in the phases.</p>"
    )


def _link_bars(stats: Sequence[LinkStat], t: Thresholds) -> str:
    row_h, top = 24, 6
    expected = [t.link_expected_gbps.get(x.link_type, 0.0) for x in stats]
    scale = max([(x.bandwidth_bytes_per_second or 0.0) / 1e9 for x in stats] + expected) or 1.0
    width = _WIDTH - _LEFT - 340
    body = []
    for n, link in enumerate(stats):
        yy = top + n * row_h
        gbps = (link.bandwidth_bytes_per_second or 0.0) / 1e9
        want = t.link_expected_gbps.get(link.link_type)
        body.append(
            f'<text x="{_LEFT - 6}" y="{yy + 15}" text-anchor="end">{escape(link.link_type)}'
            f'</text><rect class="link" x="{_LEFT}" y="{yy + 3}" width="{width * gbps / scale:.1f}"'
            f' height="{row_h - 8}" fill="#4e79a7"/>'
        )
        if want:
            xx = _LEFT + width * want / scale
            body.append(
                f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{yy}" y2="{yy + row_h - 2}" '
                'stroke="#222" stroke-dasharray="2 2"/>'
            )
        expect = f", expected {want:g}" if want else ""
        body.append(
            f'<text x="{_LEFT + width + 8}" y="{yy + 15}">{gbps:.1f} GB/s{expect} '
            f"({link.transit_bytes / 1e6:,.1f} MB in {_ms(link.transit_seconds)} ms)</text>"
        )
    return _svg(top + len(stats) * row_h + 4, "".join(body), "Bandwidth per link type")


def _size(item: Sized) -> str:
    if item.seconds_per_step is None:
        return "size not estimated"
    share = f" ({_pct(item.share_of_step)} of the step)" if item.share_of_step is not None else ""
    return f"{_ms(item.seconds_per_step)} ms per step{share}"


def _anchor(n: int) -> str:
    return f"finding-{n}"


_NOT_JUDGED_ID = ' id="not-judged"'  # the first entry: the verdict links to it


def _not_judged(report: AnalysisReport) -> str:
    """The rules withheld, with why: not a finding, and not a clean bill either."""
    groups = not_judged(report.summary.not_judged)
    return "".join(
        f'<p class="withheld"{"" if n else _NOT_JUDGED_ID}><b>Not judged</b> '
        f"({escape(', '.join(kinds))}): {escape(reason)}.</p>"
        for n, (kinds, reason) in enumerate(groups)
    )


def _findings(report: AnalysisReport, items: Sequence[Sized]) -> str:
    if not items:
        return "<p>No rule fired.</p>" + _not_judged(report)
    scope = findings_scope(report)
    note = f'<p class="note">{escape(scope[0].upper() + scope[1:])}.</p>' if scope else ""
    return (
        note
        + _not_judged(report)
        + "".join(
            f'<div class="finding" id="{_anchor(n)}"><b>{escape(i.finding.kind)}</b>: '
            f"{escape(_size(i))}<br>{escape(i.finding.detail)}"
            f'<div class="note">size: {escape(i.how)}; value {i.finding.value:.4g}, threshold '
            f"{i.finding.threshold:.4g}</div>"
            f'<div class="advice"><i>Advice:</i> {escape(i.finding.advice)}</div></div>'
            for n, i in enumerate(items)
        )
    )


def _first_sentence(text: str) -> str:
    head, dot, _ = text.partition(". ")
    return head + "." if dot else text


def _causes(report: AnalysisReport, items: Sequence[Sized], waited: Wait | None) -> list[str]:
    """The links between findings: a wait in communication points at the late rank and at the
    finding that says why it is late (a pipeline-stage gap, a slow rank)."""
    where = {i.finding.kind: n for n, i in enumerate(items)}
    lines = []
    if waited is not None and "communication" in where:
        why = (
            f": it spends {_ms(waited.why_seconds)} ms more per step in "
            f"{escape(PHASE_TITLES[waited.why_phase])} than {escape(waited.waiting)}"
            if waited.why_phase
            else ""
        )
        lines.append(
            f'<a href="#{_anchor(where["communication"])}">Communication not overlapped</a> is '
            f"waiting: {escape(waited.waiting)} spends {_ms(waited.waiting_seconds)} ms per step "
            f"there, {escape(waited.late)} {_ms(waited.late_seconds)} ms; "
            f"{escape(waited.late)} reaches the collectives late{why}."
        )
    if "pipeline_imbalance" in where:
        lines.append(
            f'Ranks of the lighter pipeline stage wait for the heavier one: see <a href="#'
            f'{_anchor(where["pipeline_imbalance"])}">the stage imbalance</a>.'
        )
    if "slow_rank" in where:
        lines.append(
            f'Within a data-parallel group: see <a href="#{_anchor(where["slow_rank"])}">the slow '
            "rank</a> (its peers wait for it)."
        )
    return lines


def _verdict(
    report: AnalysisReport, items: Sequence[Sized], baseline: float | None, t: Thresholds
) -> str:
    """What holds the job back and how much, what to do, against the reference: the first
    thing on the page."""
    s = report.summary
    step = f"{_ms(s.step.mean_seconds)} ms" if s.step is not None else "unknown"
    ratio = reference_ratio(report, baseline)
    against = ""
    if ratio is not None and s.step is not None and baseline is not None:
        state = "a regression" if ratio > t.regression_ratio else "within the regression line"
        against = (
            f"<p>Against the reference: median step {_ms(s.step.p50_seconds)} ms, "
            f"{ratio:+.1%} on the workload's median step {_ms(baseline)} ms ({state}, "
            f"+{t.regression_ratio:.0%}).</p>"
        )
    withheld = (
        '<p class="cause">Some rules did not judge this capture: see '
        '<a href="#not-judged">not judged</a>.</p>'
        if report.summary.not_judged
        else ""
    )
    if not items:
        return (
            '<div class="verdict ok" id="verdict"><div class="what">No rule fired: nothing found '
            f"holding this job back.</div><p>Step: {step}.</p>{against}{withheld}</div>"
        )
    top = items[0]
    lines = _causes(report, items, wait(s.ranks))
    others = [
        f'<li><a href="#{_anchor(n)}">{escape(i.finding.kind)}</a>: {escape(_size(i))}</li>'
        for n, i in enumerate(items[1:4], start=1)
    ]
    more = len(items) - 4
    if more > 0:
        others.append(f'<li><a href="#findings">{more} more</a></li>')
    return (
        f'<div class="verdict" id="verdict"><div class="what">What holds this job back: '
        f'<a href="#{_anchor(0)}">{escape(top.finding.kind)}</a>, '
        f'<span class="size">{escape(_size(top))}</span></div>'
        f"<p>{escape(top.finding.detail)}</p>"
        f"<p><b>What to do:</b> {escape(_first_sentence(top.finding.advice))}</p>"
        + against
        + "".join(f'<p class="cause">{line}</p>' for line in lines)
        + withheld
        + (f"<b>Also</b><ul>{''.join(others)}</ul>" if others else "")
        + "</div>"
    )


def captured_line(info: CaptureInfo) -> str:
    """One line on the daemon's capture: its steps, slot and job, e.g. "Captured steps
    1200-1249 in the 21:30:07 UTC slot of job llama-master-0.llama:23456 (from MASTER_ADDR)"."""
    first, last = info.first_step, info.last_step
    if first is None or last is None:
        what = "Captured (the step table names no step IDs)"
    else:
        what = f"Captured step {first}" if first == last else f"Captured steps {first}-{last}"
        if info.steps is not None and info.steps != last - first + 1:
            what += f" ({info.steps} of them)"
    kind = "workload" if info.workload_source in ("target", "process") else "job"
    source = SOURCE_SAID.get(info.workload_source, info.workload_source)
    of = f"{kind} {info.workload} (from {source})"
    if info.slot is None:
        return f"{what} of {of}"
    slot = datetime.fromtimestamp(info.slot, UTC).strftime("%H:%M:%S UTC")
    return f"{what} in the {slot} slot of {of}"


def _captured(info: CaptureInfo | None) -> str:
    return "" if info is None else f'<p class="note">{escape(captured_line(info))}</p>\n'


def render(
    report: AnalysisReport,
    capture: str | None = None,
    baseline_seconds: float | None = None,
    thresholds: Thresholds | None = None,
) -> str:
    """The page for ``report``; ``capture`` is the directory to open in MindStudio Insight,
    ``baseline_seconds`` the workload's step-time baseline (median p99) when it has one."""
    t = thresholds or Thresholds()
    s = report.summary
    when = (
        datetime.fromtimestamp(s.capture_time_seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if s.capture_time_seconds is not None
        else "unknown"
    )
    mode = f", {s.mode} mode" if s.mode else ""
    open_line = (
        f"<p>Capture: <code>{escape(capture)}</code><br>{escape(OPEN_IN_INSIGHT)}</p>"
        if capture
        else ""
    )
    problems = (
        "<h2>Problems reading the capture</h2><ul>"
        + "".join(f"<li>{escape(p)}</li>" for p in report.problems)
        + "</ul>"
        if report.problems
        else ""
    )
    sources = "".join(f"<li><code>{escape(p)}</code></li>" for p in report.sources)
    step_who = report.scope.step_rank
    longest = (
        f" The step figures above are {escape(step_who)}'s, the rank with the longest step."
        if step_who and len(s.ranks) > 1
        else ""
    )
    items = sized(report)
    ranks = (
        f'<h2 id="ranks">Ranks ({len(s.ranks)})</h2>{_heatmap(s.ranks)}' if len(s.ranks) > 1 else ""
    )
    shown = len(extremes(s.ranks))
    which = (
        f" The slowest and the fastest of {len(s.ranks)} ranks are drawn."
        if shown < len(s.ranks)
        else ""
    )
    captured = _captured(report.capture_info)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>npumon: {escape(s.workload)}</title><style>{_STYLE}</style></head>
<body>
<h1>npumon analysis: {escape(s.workload)}</h1>
{captured}<p class="note">layout {escape(s.layout)}{escape(mode)}; captured {when};
{len(s.ranks)} rank(s); {len(report.sources)} table(s) read</p>
{_verdict(report, items, baseline_seconds, t)}
<h2 id="steps">Step time</h2>
{_stats_table(report)}
{_timeline(report, baseline_seconds, t)}
{ranks}
<h2 id="phases">Phases per rank</h2>
<p class="note">Mean per step; each bar adds up to its rank's step (free time split into the
host preparing the step and the rest).{longest}{which}</p>
{_phases(s.ranks)}
<h2 id="findings">Findings, the largest first</h2>
{_findings(report, items)}
<h2 id="operators">Top operators</h2>
{_operators(report)}
<h2 id="communication">Communication</h2>
{_communication(report, t)}
{problems}
{open_line}
<details><summary>Tables read ({len(report.sources)})</summary><ul>{sources}</ul></details>
</body></html>
"""
