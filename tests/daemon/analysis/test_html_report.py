"""`npumon analyze --html`: the page of a real profile, opened in headless Chromium, draws its
charts, logs no error and asks for nothing beyond its own file."""

from __future__ import annotations

import json
import shutil
from html import escape
from pathlib import Path

import pytest
from analysis_helpers import FIXTURES

from npumon.daemon.analysis.analysis import analyze_path
from npumon.daemon.analysis.figures import partition
from npumon.daemon.analysis.html import CSP, OPEN_IN_INSIGHT, render
from npumon.daemon.analysis.report import add_arguments, run
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
    assert seen["steps"] == 1  # one step of one rank
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
    assert seen["steps"] == 4 and seen["baseline"] == 1
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
