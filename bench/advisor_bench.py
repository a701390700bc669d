"""npumon and Huawei's msprof-analyze side by side on the same directories.

Real public exports (tests/fixtures/msprof/trees) and synthetic 100k-row torch_npu exports. Each
run is a child process under a timeout (its process group is killed; the cell then reads
"> T s (killed)"); runs of the two tools alternate, and the table prints the medians of wall
time and peak RSS, then the findings of each; a second table puts the advisor's small-packet
figure beside npumon's for the same rank, counted npumon's way and msprof-analyze's way.
msprof-analyze comes from the `bench` extra (`make bench` installs it into .venv-bench); without
it msprof-analyze's column says so.

    python bench/advisor_bench.py [--runs 3] [--timeout 600] [--rows 100000] [--json PATH]
                               [--only TREE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analysis_bench import KERNEL_HEADER, write_table  # noqa: E402

from npumon.daemon.analysis.readers import comm  # noqa: E402
from npumon.daemon.analysis.rules.small_packets import packet_stat  # noqa: E402
from npumon.daemon.model.profile import Thresholds  # noqa: E402

TREES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "msprof" / "trees"
REAL = (
    "text_level0",
    "text_level1",
    "pp2dp2_level2",
    "db_level0",
    "db_level1",
    "mindspore22_run1",
    "mindspore22_run2",
    "mindspore22_cluster",
    "prof_not_exported",
)
# msprof-analyze advisor rows (its "type" column) -> what npumon calls the same issue
PEER_KINDS = {
    "慢卡分析": "slow_rank",  # slow rank: "computing" or "communication has a problem"
    "慢链路分析": "slow_link",
    "动态shape": "dynamic_shape",
    "AICPU": "ai_cpu_fallback",
    "包分析": "small_packets",  # packet analysis: transfers too small
    "环境变量": "env_vars",
    "算子性能分析": "operator_pmu",  # AI Core / Vector operator PMU bottlenecks
    "字节对齐分析": "byte_alignment",  # collective transfers not a multiple of 512 B
    "算子下发": "online_compile",  # operator dispatch: aclopCompileAndExecute
    "亲和API": "affinity_api",  # torch call sequences with a fused torch_npu API
    "可融合算子": "fusible_ops",  # fusible operator sequences
    "整网耗时": "overall_summary",
}
# npumon kinds that answer each advisor kind
ANSWERS = {
    "slow_rank": {"slow_rank", "pipeline_imbalance"},
    "slow_link": {"slow_link"},
    "dynamic_shape": {"dynamic_shape"},
    "ai_cpu_fallback": {"ai_cpu_fallback"},
    "small_packets": {"small_packets"},
    "env_vars": {"env_vars"},
    "operator_pmu": {"operator_pmu"},
    "affinity_api": {"affinity_api"},
    "fusible_ops": {"fusible_ops"},
}


# advisor findings that are not real, per fixture tree: the "npumon misses" cell says why
NOT_REAL = {
    ("text_level0", "dynamic_shape"): "Level0 kernel_details has no OP State column; "
    "the advisor counts every task as dynamic (the Level1 capture of the same job has static "
    "MatMuls)",
    ("text_level1", "operator_pmu"): "its vector shapes with headroom are 2-107 us each, 0.8 % "
    "of operator time together; npumon judges shapes of at least 0.5 % each",
    ("db_level1", "operator_pmu"): "the same job as text_level1: its vector shapes with headroom "
    "are each under 0.5 % of operator time",
}


def unanswered(ours: set[str], theirs: set[str]) -> set[str]:
    """msprof-analyze's findings no npumon finding answers
    ("slow_rank(computing)" -> "slow_rank")."""
    return {
        kind
        for kind in theirs
        if not kind.startswith("(")
        and not ANSWERS.get(kind.split("(")[0], {kind.split("(")[0]}) & ours
    }


class Run:
    def __init__(self, seconds: float, rss_mb: float, killed: bool, output: str) -> None:
        self.seconds, self.rss_mb, self.killed, self.output = seconds, rss_mb, killed, output


def run(argv: Sequence[str], cwd: Path, timeout: float) -> Run:
    """One child in its own process group: wall time, peak RSS (wait4), killed on timeout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(
            argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        killed = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > timeout:
                os.killpg(child.pid, signal.SIGKILL)
                _, status, usage = os.wait4(child.pid, 0)
                killed = True
                break
            time.sleep(0.02)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", errors="replace")
    return Run(time.perf_counter() - started, usage.ru_maxrss / 1024, killed, text)


def npumon_argv(path: Path) -> list[str]:
    return [sys.executable, "-m", "npumon.daemon.cli", "analyze", "--json", str(path)]


def advisor_argv(path: Path, out: Path) -> list[str] | None:
    tool = shutil.which("msprof-analyze", path=str(Path(sys.executable).parent))
    return None if tool is None else [tool, "advisor", "all", "-d", str(path), "-o", str(out)]


def npumon_findings(output: str) -> set[str]:
    try:
        start = output.index("{")
        report = json.loads(output[start:])
    except ValueError:
        return {"(no report)"}
    return {b["kind"] for b in report["summary"]["bottlenecks"]}


def advisor_findings(output: str) -> set[str]:
    """Rows of the advisor's table that carry advice, or say a problem was found."""
    found = set()
    for line in output.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 6 or not cells[1].isdigit():
            continue
        kind = next((v for k, v in PEER_KINDS.items() if k in cells[2]), cells[2])
        problem = "有问题" in cells[3]  # "... has a problem"
        if cells[4] or problem:
            detail = "(computing)" if "计算" in cells[3] else "(communication)" if problem else ""
            found.add(kind + detail)
    return found


def synthetic(root: Path, rows: int) -> Path:
    """SYNTHETIC: one rank, `rows` kernel_details rows (analysis_bench's generator) + one step."""
    out = root / f"synthetic_{rows}" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    write_table(out / "kernel_details.csv", KERNEL_HEADER, range(rows), step=True)
    info = TREES / "text_level1" / "rank0_ascend_pt" / "profiler_info_0.json"
    # msprof-analyze wants a torch_npu profile's metadata
    shutil.copyfile(info, out.parent / info.name)
    (out / "step_trace_time.csv").write_text(
        "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
        "Communication(Not Overlapped and Exclude Receive),Preparing\n"
        "13,800000,100000,50000,150000,100000,1000000,0,100000,2000\n"
    )
    return out.parents[1]


# the advisor's packet line: "In the SDMA communication, 30.00% of ... is less than 16.0 MB, and
# the total time is 0.8065 ms" (Chinese by default), and the rank its communication analysis took
_ADVISOR_PACKETS = re.compile(
    r"在(SDMA|RDMA)通信中，通信数据量的([\d.]+)%小于([\d.]+)MB，总时间为([\d.]+)ms"
)
_ADVISOR_RANK = re.compile(r"Minimum (SDMA|RDMA) bandwidth for rank (\d+)")
_RANK = re.compile(r"rank_?(\d+)")


def _rank_file(path: Path, rank: int) -> Path | None:
    for found in sorted(path.glob("*/ASCEND_PROFILER_OUTPUT/communication.json")):
        number = _RANK.search(found.parents[1].name)
        if number and int(number[1]) == rank:
            return found
    return None


def _advisor_count(path: Path, link: str, min_mb: float) -> tuple[int, int]:
    """(ops, small ops) of one communication.json counted as the advisor counts them: every op
    entry that moved data, the Total Op Info sums included (packet_checker.py)."""
    ops = small = 0
    for step in json.loads(path.read_text()).values():
        for group in step.values():
            for op in (group or {}).values():
                mb = op["Communication Bandwidth Info"].get(link, {}).get("Transit Size(MB)", 0)
                if mb:
                    ops, small = ops + 1, small + (mb < min_mb)
    return ops, small


def packets(name: str, path: Path, advisor_output: str) -> list[list[str]]:
    """Per transport the advisor reported: its figure, npumon's for the same rank, that rank
    counted msprof-analyze's way, and npumon's worst rank."""
    rows = []
    t = Thresholds()
    ranks = {link: int(rank) for link, rank in _ADVISOR_RANK.findall(advisor_output)}
    for link, percent, _, ms in _ADVISOR_PACKETS.findall(advisor_output):
        rank = ranks.get(link, 0)
        file = _rank_file(path, rank)
        if file is None:
            continue
        files = sorted(path.glob("*/ASCEND_PROFILER_OUTPUT/communication.json"))
        ranks = [comm.read_rank([f], [f.parents[1].name], []) for f in files]
        stats = [packet_stat(p, t) for p in comm.combine(ranks, []).packets if p.link_type == link]
        own = next((p for p in stats if p.rank == file.parents[1].name), None)
        worst = max(stats, key=lambda p: p.small_ops / p.ops, default=None)
        ops, small = _advisor_count(
            file, link, t.small_packet_sdma_mb if link == "SDMA" else t.small_packet_rdma_mb
        )
        rows.append(
            [
                name,
                link,
                f"rank {rank}: {float(percent):.0f} %, {float(ms):.2f} ms",
                "-"
                if own is None
                else f"{own.small_ops} of {own.ops} "
                f"({own.small_ops / own.ops:.0%}), {own.small_ms:.2f} ms",
                f"{small} of {ops} ({small / ops:.0%})" if ops else "-",
                "-"
                if worst is None
                else f"{worst.rank}: {worst.small_ops} of {worst.ops} "
                f"({worst.small_ops / worst.ops:.0%})",
            ]
        )
    return rows


PACKET_HEADER = [
    "directory",
    "transport",
    "msprof-analyze (its rank)",
    "npumon, same rank",
    "same rank, Total Op Info counted (msprof-analyze's way)",
    "npumon's worst rank",
]


def cell(runs: list[Run], timeout: float) -> str:
    if any(r.killed for r in runs):
        return f"> {timeout:g} s (killed)"
    return (
        f"{statistics.median(r.seconds for r in runs):.2f} s / "
        f"{statistics.median(r.rss_mb for r in runs):.0f} MB"
    )


def compare(
    name: str, path: Path, args: argparse.Namespace, work: Path, small: list[list[str]]
) -> list[str]:
    ours, theirs = [], []
    for index in range(args.runs):  # alternate: neither tool always runs on a warm cache
        ours.append(run(npumon_argv(path), work, args.timeout))
        copy = work / f"advisor_{name}_{index}"
        shutil.copytree(path, copy)  # msprof-analyze writes into the directory it analyses
        argv = advisor_argv(copy, work / f"advisor_out_{name}_{index}")
        if argv is not None:
            theirs.append(run(argv, copy, args.timeout))
    ours_found = npumon_findings(ours[-1].output)
    theirs_found = advisor_findings(theirs[-1].output) if theirs else {"(msprof-analyze missing)"}
    if theirs and theirs[-1].killed:
        theirs_found = {"(killed)"}
    if theirs:
        small += packets(name, path, theirs[-1].output)
    missed = unanswered(ours_found, theirs_found)
    why = {kind: NOT_REAL[(name, kind)] for kind in missed if (name, kind) in NOT_REAL}
    misses = ", ".join(sorted(missed - set(why))) or "-"
    misses += "".join(f" (msprof-analyze's {k} not real: {r})" for k, r in sorted(why.items()))
    return [
        name,
        cell(ours, args.timeout),
        cell(theirs, args.timeout) if theirs else "-",
        ", ".join(sorted(ours_found)) or "-",
        ", ".join(sorted(theirs_found)) or "-",
        misses,
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--json", type=Path, help="write the table here")
    parser.add_argument(
        "--only", nargs="+", choices=REAL, help="these fixture trees only (no synthetic export)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="npumon-advisor-bench-") as tmp:
        work = Path(tmp)
        dirs = [(n, TREES / n) for n in args.only or REAL]
        if not args.only:
            dirs.append((f"synthetic {args.rows:,} rows", synthetic(work, args.rows)))
        table = [
            [
                "directory",
                "npumon (median)",
                "msprof-analyze (median)",
                "npumon finds",
                "msprof-analyze finds",
                "npumon misses",
            ]
        ]
        small = [PACKET_HEADER]
        for name, path in dirs:
            table.append(compare(name.replace(" ", "_").replace(",", ""), path, args, work, small))
            table[-1][0] = name
            print(" | ".join(table[-1]), flush=True)
            if args.json:  # after each row: a run stopped by its timeout keeps the rows done
                _write(args, table, small)
    print(f"\n{args.runs} alternated run(s) each, timeout {args.timeout:g} s, wall / peak RSS:")
    _print(table)
    print("\nSmall packets, the advisor's figure beside npumon's:")
    _print(small)
    return 0


def _print(table: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for row in table:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def _write(args: argparse.Namespace, table: list[list[str]], small: list[list[str]]) -> None:
    args.json.write_text(
        json.dumps(
            {"runs": args.runs, "timeout_s": args.timeout, "table": table, "packets": small},
            indent=1,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
