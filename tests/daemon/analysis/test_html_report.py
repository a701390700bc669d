"""`npumon analyze --html`: the page of a real profile, opened in headless Chromium, draws its
charts, logs no error and asks for nothing beyond its own file."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from datetime import UTC, datetime
from html import escape
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES, column, number, rows, torch_tree

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.analysis.figures import partition
from npumon.daemon.analysis.html import CSP, OPEN_IN_INSIGHT, captured_line, render
from npumon.daemon.analysis.report import add_arguments, format_report, report_to_json, run
from npumon.daemon.analysis.verdict import sized
from npumon.daemon.model.capture_info import SOURCE_SAID, CaptureInfo
from npumon.daemon.profiling.identity import SOURCES
from tests.helpers.browser import load

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "profile"
PP2DP2 = FIXTURES / "trees" / "pp2dp2_level2"

# what the page holds, counted by the browser once it has drawn it
PROBE = """JSON.stringify({
  title: document.title,
  charts: document.querySelectorAll('svg').length,
  steps: document.querySelectorAll('#steps ~ svg circle').length,
  baseline: document.querySelectorAll('rect.baseline').length,
  phases: document.querySelectorAll('rect.phase').length,
  ops: document.querySelectorAll('rect.op').length,
  comm: document.querySelectorAll('rect.comm').length,
  links: document.querySelectorAll('rect.link').length,
  findings: document.querySelectorAll('.finding').length,
  heat: document.querySelectorAll('rect.heat').length,
  width: document.querySelector('svg').getBoundingClientRect().width,
  text: document.body.innerText,
})"""


def _page(tmp_path: Path, html: str) -> Path:
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    return page


def _open(tmp_path: Path, html: str) -> dict[str, object]:
    page = _page(tmp_path, html)
    seen = load(page, PROBE, tmp_path)
    assert seen.errors == []
    assert set(seen.requests) <= {page.as_uri()}  # the page itself, nothing else
    assert seen.blocked == []
    value: dict[str, object] = json.loads(seen.value)
    return value


@pytest.mark.integration
def test_example_profile_page_draws_its_charts(tmp_path: Path) -> None:
    report = analyze_path(EXAMPLE)
    s = report.summary
    seen = _open(tmp_path, render(report, capture=str(EXAMPLE)))
    assert seen["title"] == "npumon: profile"
    assert seen["steps"] == 0  # one step of one rank: no timeline, the step table has it
    assert seen["phases"] == len(partition(s.ranks[0].phases, s.ranks[0].step_seconds)) == 4
    assert seen["ops"] == len([o for o in s.op_time_ratio if o.op_type != "other"])
    assert seen["findings"] == len(s.bottlenecks) > 0
    assert seen["width"] > 0
    text = str(seen["text"])
    assert str(EXAMPLE) in text and "MindStudio Insight" in text


@pytest.mark.integration
def test_four_rank_page_with_a_baseline(tmp_path: Path) -> None:
    """Qwen3 TP1 PP2 DP2: four ranks' phases, two ranks' operators, the link bandwidth, and the
    baseline band a daemon's report carries."""
    report = analyze_path(PP2DP2)
    seen = _open(tmp_path, render(report, capture=str(PP2DP2), baseline_seconds=0.8))
    assert seen["charts"] >= 5
    assert seen["steps"] == 0  # one step per rank: no timeline, the heatmap has them
    assert seen["heat"] == 4 * 5  # four ranks: their step and four phases each
    assert seen["phases"] == 16  # four ranks, four parts each
    assert seen["ops"] == 20  # the top 10 of ranks 0 and 2, the only ones with an op table
    assert seen["links"] == 1  # HCCS; SDMA is the same transfers
    text = str(seen["text"])
    assert "ranks rank0, rank1, rank2, rank3 (summed)" in text


@pytest.mark.integration
def test_the_watcher_sees_requests_and_errors(tmp_path: Path) -> None:
    """The browser check itself: a page without the report's CSP that loads an image from
    loopback and logs an error is caught on both counts."""
    page = _page(
        tmp_path,
        '<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">'
        "<script>console.error('boom')</script></body></html>",
    )
    seen = load(page, "JSON.stringify(1)", tmp_path)
    assert "http://127.0.0.1:9/x.png" in seen.requests
    assert any("boom" in e for e in seen.errors)


@pytest.mark.integration
def test_the_report_csp_refuses_requests(tmp_path: Path) -> None:
    """With the report's CSP, the same image is never fetched (and the refusal is logged)."""
    page = _page(
        tmp_path,
        f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
        f'content="{CSP}"></head><body><img src="http://127.0.0.1:9/x.png"></body></html>',
    )
    seen = load(page, "JSON.stringify(1)", tmp_path)
    assert "http://127.0.0.1:9/x.png" not in seen.requests
    assert seen.blocked == ["http://127.0.0.1:9/x.png"]
    assert seen.errors  # the CSP violation


def test_cli_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out = tmp_path / "report.html"
    assert run(parser.parse_args([str(EXAMPLE), "--html", str(out)])) == 0
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and CSP in html
    assert escape(OPEN_IN_INSIGHT) in html and str(EXAMPLE.resolve()) in html
    for remote in ("http://", "https://", "//cdn", "<script"):
        assert remote not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "Step time (rank0)" in capsys.readouterr().out
    assert not list(tmp_path.glob(".*partial"))


def test_cli_html_to_a_missing_directory_fails_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert run(parser.parse_args([str(EXAMPLE), "--html", str(tmp_path / "no" / "r.html")])) == 1
    assert "cannot write" in capsys.readouterr().err


def test_page_of_a_copy_names_the_copy(tmp_path: Path) -> None:
    copy = tmp_path / "job"
    shutil.copytree(EXAMPLE, copy)
    html = render(analyze_path(copy), capture=str(copy))
    assert f"<code>{copy}</code>" in html


# where the verdict ends and how tall the page is, laid out in a 1,400 x 900 window
LAYOUT = """JSON.stringify({
  verdict: document.getElementById('verdict').getBoundingClientRect().bottom,
  size: document.querySelector('#verdict .size')?.innerText ?? null,
  height: document.documentElement.scrollHeight,
  text: document.body.innerText,
})"""
SCREEN = (1400, 900)
MULTI_RANK = ("pp2dp2_level2", "mindspore22_cluster", "text_level1", "text_level0")


def _layout(tmp_path: Path, html: str) -> dict[str, object]:
    page = _page(tmp_path, html)
    seen = load(page, LAYOUT, tmp_path, viewport=SCREEN)
    assert seen.errors == []
    value: dict[str, object] = json.loads(seen.value)
    return value


def sixteen_rank_tree(root: Path) -> Path:
    """16 ranks, each with the step table and operator table of a real Qwen3 rank."""
    for rank in range(16):
        torch_tree(
            root,
            rank,
            step_trace_time=f"step_trace_time_torchnpu_cann8.3rc1_rank{rank % 4}.csv",
            op_statistic="op_statistic_torchnpu_cann8.3rc1.csv",
        )
    return root


@pytest.mark.integration
@pytest.mark.parametrize("name", MULTI_RANK)
def test_first_screen_holds_the_verdict_with_its_size(tmp_path: Path, name: str) -> None:
    path = FIXTURES / "trees" / name
    report = analyze_path(path)
    seen = _layout(tmp_path, render(report, capture=str(path)))
    assert float(str(seen["verdict"])) <= SCREEN[1]
    found = sized(report)
    if found and found[0].seconds_per_step is not None:
        assert f"{found[0].seconds_per_step * 1e3:,.3f} ms per step" in str(seen["size"])
    elif found:  # a rule that gives no size yet (a share of operator or transfer time)
        assert str(seen["size"]) == "size not estimated"


@pytest.mark.integration
def test_sixteen_ranks_fit_under_3000_px(tmp_path: Path) -> None:
    report = analyze_path(sixteen_rank_tree(tmp_path / "job"))
    assert len(report.summary.ranks) == 16
    seen = _layout(tmp_path, render(report, capture="job"))
    assert float(str(seen["verdict"])) <= SCREEN[1]
    assert int(str(seen["height"])) < 3000


def test_gpt3_overlap_agrees_with_the_step_table(tmp_path: Path) -> None:
    """GPT-3: the kernel table's HCCL tasks add up to far less than the step table's
    communication; the overlap chart, the text report and the JSON give the step table's
    Communication, Communication(Not Overlapped) and Overlapped, never a share of the tasks."""
    name = "step_trace_time_torchnpu_2023-09.csv"
    torch_tree(
        tmp_path,
        0,
        step_trace_time=name,
        kernel_details="kernel_details_torchnpu_2023-09_memoryl0.csv",
    )
    exposed, hidden, total = (
        number(column(name, h)[0])
        for h in ("Communication(Not Overlapped)", "Overlapped", "Communication")
    )
    assert exposed is not None and hidden is not None and total is not None
    assert exposed + hidden == pytest.approx(total)  # the table's own sum
    report = analyze_path(tmp_path)
    html = render(report)
    chart = html[html.index("Communication overlapped with compute or not") :]
    chart = chart[: chart.index("</table>")]
    assert f"{total / 1e3:,.3f} ms per step, {exposed / total:.1%} not overlapped" in chart
    assert f"rank0: not overlapped {exposed / 1e3:,.3f} ms per step" in chart
    assert f"rank0: overlapped with compute {hidden / 1e3:,.3f} ms per step" in chart
    assert (
        f"<td>rank0</td><td>{total / 1e3:,.3f}</td><td>{exposed / 1e3:,.3f}</td>"
        f"<td>{hidden / 1e3:,.3f}</td>"
    ) in chart
    assert "overlap unknown" not in html.lower() and "100.0% not overlapped" not in html
    text = format_report(report)
    assert (
        f"communication {total / 1e3:.3f} ms = {exposed / 1e3:.3f} ms not overlapped + "
        f"{hidden / 1e3:.3f} ms overlapped with compute (within computing)"
    ) in text
    summary = json.loads(report_to_json(report))["summary"]
    step = summary["step"]["mean_seconds"]
    for phases in (summary["phases"], summary["ranks"][0]["phases"]):
        by = {p["phase"]: p for p in phases}
        assert by["communication"]["seconds"] == pytest.approx(exposed / 1e6)
        assert by["communication"]["within"] is None
        assert by["communication_overlapped"]["seconds"] == pytest.approx(hidden / 1e6)
        assert by["communication_overlapped"]["within"] == "computing"
        assert by["communication_overlapped"]["seconds"] <= by["computing"]["seconds"]
        assert sum(p["seconds"] for p in phases if p["within"] is None) == pytest.approx(step)


@pytest.mark.parametrize("dropped", [("Overlapped",), ("Overlapped", "Communication")])
def test_a_step_table_without_overlapped(tmp_path: Path, dropped: tuple[str, ...]) -> None:
    """GPT-3's table as a torch_npu that writes no Overlapped column: with Communication the
    overlapped part is the total minus the not overlapped; without either it is unknown, said
    so, and no overlapped phase enters the JSON."""
    name = "step_trace_time_torchnpu_2023-09.csv"
    header, body = rows(name)
    keep = [i for i, h in enumerate(header) if h not in dropped]
    out = tmp_path / "rank_0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "step_trace_time.csv").write_text(
        "\n".join(",".join(r[i] for i in keep) for r in [header, *body]) + "\n"
    )
    exposed = number(column(name, "Communication(Not Overlapped)")[0])
    total = number(column(name, "Communication")[0])
    assert exposed is not None and total is not None
    report = analyze_path(tmp_path)
    phases = {p.phase: p.seconds for p in report.summary.phases}
    html = render(report)
    if "Communication" in dropped:
        assert "communication_overlapped" not in phases
        assert f"{exposed / 1e3:,.3f} ms not overlapped; overlap unknown" in html
        assert "Overlap unknown for rank0: the step table has no Overlapped column" in html
    else:
        assert phases["communication_overlapped"] == pytest.approx((total - exposed) / 1e6)
        assert f"{total / 1e3:,.3f} ms per step, {exposed / total:.1%} not overlapped" in html


def test_the_waiting_rank_is_not_called_the_one_waited_for() -> None:
    """Qwen3 PP2 DP2: the rank with the longest step is not the rank the others wait for; the
    page names the waiting and the late rank from the step tables' communication."""
    html = render(analyze_path(PP2DP2))
    assert "the others wait for it" not in html
    comm = {
        f"rank{r}": number(
            column(
                f"step_trace_time_torchnpu_cann8.3rc1_rank{r}.csv", "Communication(Not Overlapped)"
            )[0]
        )
        for r in range(4)
    }
    waiting = max(comm, key=lambda r: comm[r] or 0.0)
    late = min(comm, key=lambda r: comm[r] or 0.0)
    assert f"is waiting: {waiting} spends" in html
    assert f"{late} reaches the collectives late" in html


def test_the_reference_is_labelled_a_median_step() -> None:
    """The baseline is the median of the captures' median steps: labelled so, never "p99", and
    drawn as a line with the regression line above it (MindSpore run 1: 322 steps)."""
    report = analyze_path(FIXTURES / "trees" / "mindspore22_run1")
    html = render(report, baseline_seconds=0.5)
    assert "baseline p99" not in html
    assert "reference: the workload&#x27;s median step 500.000 ms" in html
    assert html.count('class="reference"') == 1 and html.count('class="regression"') == 1
    assert "Against the reference: median step" in html


def test_a_daemon_capture_says_its_steps_slot_and_job_first() -> None:
    """The daemon's capture (capture_info) on the line under the title; a profile without it
    (npumon analyze) gets the page it got before, and its JSON no such key."""
    report = analyze_path(EXAMPLE)
    plain = render(report)
    slot = datetime(2026, 12, 7, 21, 30, 7, tzinfo=UTC).timestamp()
    info = CaptureInfo("llama-master-0.llama:23456", "master_addr", 1800.0, slot).with_steps(
        [("rank0", [1200, 1201, None]), ("rank1", [1249])]
    )
    assert (info.first_step, info.last_step, info.steps) == (1200, 1249, 3)
    aligned = render(replace(report, capture_info=info))
    line = (
        '<p class="note">Captured steps 1200-1249 (3 of them) in the 21:30:07 UTC slot of job '
        "llama-master-0.llama:23456 (from MASTER_ADDR)</p>\n"
    )
    assert aligned == plain.replace("</h1>\n", "</h1>\n" + line, 1)
    contiguous = replace(info, steps=50, rank_steps={})
    assert captured_line(contiguous).startswith("Captured steps 1200-1249 in the 21:30:07 UTC")
    unaligned = CaptureInfo("trainer", "process", 1800.0)
    assert captured_line(unaligned) == (
        "Captured (the step table names no step IDs) of workload trainer (from the process name)"
    )
    assert "capture_info" not in json.loads(report_to_json(report))
    assert json.loads(report_to_json(replace(report, capture_info=info)))["capture_info"][
        "rank_steps"
    ] == {"rank0": [1200, 1201], "rank1": [1249, 1249]}


def test_every_identity_source_has_its_words() -> None:
    assert set(SOURCE_SAID) == set(SOURCES)
