"""Every bundle under tests/fixtures/bundles/ (a node someone handed us, see its README) replays
to its golden exposition, `<bundle>.prom` beside it: the npu_* families only, as npumon's own
(npumon_*) carry the replay's clock and durations."""

from __future__ import annotations

from pathlib import Path

import pytest

from npumon.daemon import replay
from tests.helpers.exposition import promtool_problems

BUNDLES = Path(__file__).parents[1] / "fixtures" / "bundles"
ALL = sorted(BUNDLES.glob("*.tar.gz"))


def npu_lines(text: str) -> str:
    """The exposition's lines of npu_* families, HELP and TYPE included."""
    kept = []
    for line in text.splitlines(keepends=True):
        name = line.split(" ")[2] if line.startswith("# ") else line
        if name.startswith("npu_"):
            kept.append(line)
    return "".join(kept)


def test_there_are_bundles() -> None:
    assert {p.name for p in ALL} >= {"910b-8.tar.gz", "a3-8x2.tar.gz"}


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_a_bundle_replays_to_its_golden_exposition(
    path: Path, tmp_path: Path, update_golden: bool
) -> None:
    text = replay.exposition(path, tmp_path).decode()
    assert promtool_problems(text) == ""
    got = npu_lines(text)
    golden = path.with_name(path.name.removesuffix(".tar.gz") + ".prom")
    if update_golden:
        golden.write_text(got)
    assert golden.exists(), f"no golden file; run pytest {__file__} --update-golden and review"
    assert got == golden.read_text()
