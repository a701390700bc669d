"""Time `analyze_path` on synthetic kernel_details, sliced op_summary and a 4-rank export.

Sizes 100k and 1M rows (--rows); the 4-rank export (kernel_details of rows/4 and a
step_trace_time table per rank) at the largest size. Against each: a naive baseline in its own
child (`pandas.read_csv` of the same CSVs + a groupby of duration by op type). npumon and the
baseline alternate, --runs times each (medians printed).

Budget: 1M rows < 1 s and < 600 MB peak, at least 3x faster than the naive baseline. Each
analysis runs in its own child
process, so the peak RSS is the analysis's own (interpreter + pandas + data). The child reads
its own peak (RUSAGE_SELF) and that of its CSV worker processes (RUSAGE_CHILDREN, the largest
one); since the workers run side by side, the reported peak is the sum
``self + workers x largest worker``, an upper bound.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = 1_000_000
CHILD_TIMEOUT_S = 300

# CANN 8.3.RC1 torch_npu header (PipeUtilization metrics), as in the real sample
KERNEL_HEADER = (
    "Step Id,Device_id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,"
    "Start Time(us),Duration(us),Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,"
    "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,"
    "Context ID,aicore_time(us),aic_total_cycles,aic_mac_time(us),aic_mac_ratio,"
    "aic_scalar_time(us),aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),"
    "aic_mte2_ratio,aic_fixpipe_time(us),aic_fixpipe_ratio,aic_icache_miss_rate,aiv_time(us),"
    "aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,"
    "aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte3_time(us),aiv_mte3_ratio,aiv_icache_miss_rate,"
    "cube_utilization(%)"
)
# msprof op_summary (CANN 8, Task Type / Op Name spellings, no Step Id)
SUMMARY_HEADER = KERNEL_HEADER.replace("Step Id,", "").replace(",Name,Type,", ",Op Name,OP Type,")
SUMMARY_HEADER = SUMMARY_HEADER.replace("Accelerator Core", "Task Type").replace(
    "Start Time(us),Duration(us),Wait Time(us),Block Dim,Mix Block Dim",
    "Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Num,Mix Block Num",
)
OPS = [
    ("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE"),
    ("aclnnFlashAttentionScore_FlashAttentionScore", "FlashAttentionScore", "MIX_AIC"),
    ("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE"),
    ("aclnnCast_CastAiCore_Cast", "Cast", "AI_VECTOR_CORE"),
    ("trans_TransData_12", "TransData", "AI_VECTOR_CORE"),
    ("aclnnRmsNorm_RmsNorm_RmsNorm", "RmsNorm", "AI_VECTOR_CORE"),
    ("Unique_cpu", "Unique", "AI_CPU"),
    ("hcom_allReduce__483_2", "hcom_allReduce_", "HCCL"),
]
METRICS = ",".join(["0.125"] * 25)


def _row(index: int, rng: random.Random, step: bool) -> str:
    name, op_type, core = OPS[index % len(OPS)]
    start = 1764246877073569.640 + index * 25.0
    duration = rng.uniform(1.0, 400.0)
    hccl = core == "HCCL"
    task = "N/A" if hccl else str(30000 + index % 60000)
    metrics = ",".join(["N/A"] * 25) if hccl else METRICS
    lead = f"{13 + index // 250_000}," if step else ""
    return (
        f"{lead}0,4294967295,{task},2,{name},{op_type},dynamic,{core},{start:.3f}\t,"
        f'{duration:.3f},{rng.uniform(0, 50):.3f},40,0,NO,"""4096,1024;1024,4096""",'
        f'DT_BF16;DT_BF16,ND;ND,"""4096,4096""",DT_BF16,ND,N/A,{metrics}\n'
    )


def write_table(path: Path, header: str, rows: range, step: bool) -> None:
    rng = random.Random(rows.start)
    with path.open("w", encoding="utf-8") as handle:
        handle.write(header + "\n")
        chunk: list[str] = []
        for index in rows:
            chunk.append(_row(index, rng, step))
            if len(chunk) == 50_000:
                handle.write("".join(chunk))
                chunk.clear()
        handle.write("".join(chunk))


def build(root: Path, rows: int = ROWS) -> tuple[Path, Path]:
    torch_root = root / "host_1234_20251127120000000_ascend_pt"
    (torch_root / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    write_table(
        torch_root / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv",
        KERNEL_HEADER,
        range(rows),
        step=True,
    )
    prof = root / "PROF_000001_20251127120000000_ABCDEFGHIJKLMNOP"
    out = prof / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    half = rows // 2  # two slices, as msprof writes large tables
    write_table(out / "op_summary_slice_0_20251127120001.csv", SUMMARY_HEADER, range(half), False)
    write_table(
        out / "op_summary_slice_1_20251127120002.csv", SUMMARY_HEADER, range(half, rows), False
    )
    return torch_root, prof


STEP_TRACE = (
    "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
    "Communication(Not Overlapped and Exclude Receive),Preparing\n"
)


def build_ranks(root: Path, rows: int, ranks: int = 4) -> Path:
    """A 4-rank torch_npu export: kernel_details of rows/ranks rows and a step table per rank."""
    cluster = root / f"cluster_{rows}"
    per_rank = rows // ranks
    for rank in range(ranks):
        out = cluster / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        write_table(
            out / "kernel_details.csv",
            KERNEL_HEADER,
            range(rank * per_rank, (rank + 1) * per_rank),
            step=True,
        )
        steps = "".join(
            f"{13 + s},{800000 + 1000 * rank},100000,50000,150000,100000,1000000,0,100000,2000\n"
            for s in range(4)
        )
        (out / "step_trace_time.csv").write_text(STEP_TRACE + steps)
    return cluster


def naive_child(path: Path) -> None:
    """What a user would write: read every CSV, group duration by op type."""
    import pandas as pd

    started = time.perf_counter()
    frames = []
    for csv in sorted(path.rglob("*.csv")):
        if csv.name.startswith(("kernel_details", "op_summary")):
            frame = pd.read_csv(csv)
            frames.append(
                frame.rename(columns={"Task Duration(us)": "Duration(us)", "OP Type": "Type"})
            )
    table = pd.concat(frames, ignore_index=True)
    top = table.groupby("Type")["Duration(us)"].sum().sort_values(ascending=False)
    elapsed = time.perf_counter() - started
    print(f"top op {top.index[0]} {top.iloc[0] / top.sum():.3f}")
    print(f"naive {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(f"{elapsed:.3f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")


def measure(path: Path, naive: bool = False) -> tuple[float, float, str]:
    """(seconds of analyze_path, peak RSS in MB including its workers) of one child process."""
    child = subprocess.Popen(
        [sys.executable, __file__, "--naive-child" if naive else "--child", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    while True:
        pid, status, _ = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            child.kill()
            raise SystemExit(f"analysis of {path} exceeded {CHILD_TIMEOUT_S} s")
        time.sleep(0.05)
    assert child.stdout is not None
    output = child.stdout.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"analysis child failed on {path}")
    lines = output.strip().splitlines()
    seconds, rss_kib = lines[-1].split()
    return float(seconds), float(rss_kib) / 1024.0, lines[-2]


def child(path: Path) -> None:
    import pandas  # noqa: F401  (imported before the clock starts, as in naive_child)

    from npumon.daemon.analysis.analysis import analyze_path
    from npumon.daemon.analysis.readers import chunks

    started = time.perf_counter()
    report = analyze_path(path)
    elapsed = time.perf_counter() - started
    top = report.summary.op_time_ratio[0]
    print(f"top op {top.op_type} {top.ratio:.3f}; problems {len(report.problems)}")
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    workers = min(os.cpu_count() or 1, chunks.MAX_WORKERS) if worker else 0
    print(f"analysis process {own / 1024:.0f} MB, {workers} worker(s) <= {worker / 1024:.0f} MB")
    print(f"{elapsed:.3f} {own + workers * worker}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--naive-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, ROWS])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    if args.naive_child:
        naive_child(args.naive_child)
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="npumon-analysis-bench-") as tmp:
        for rows in args.rows:
            root = Path(tmp) / str(rows)
            root.mkdir()
            started = time.perf_counter()
            torch_root, prof = build(root, rows)
            cases = [("kernel_details", torch_root), ("op_summary (2 slices)", prof)]
            if rows == max(args.rows):
                cases.append(("4 ranks (kernel_details + step table)", build_ranks(root, rows)))
            print(f"generated {rows:,} rows per case in {time.perf_counter() - started:.1f} s")
            for label, path in cases:
                ours, theirs = [], []
                for _ in range(args.runs):  # alternated: neither always on a warm page cache
                    ours.append(measure(path))
                    theirs.append(measure(path, naive=True))
                row = {
                    "case": label,
                    "rows": rows,
                    "npumon_s": statistics.median(r[0] for r in ours),
                    "npumon_mb": statistics.median(r[1] for r in ours),
                    "naive_s": statistics.median(r[0] for r in theirs),
                    "naive_mb": statistics.median(r[1] for r in theirs),
                    "detail": ours[-1][2],
                }
                row["speedup"] = row["naive_s"] / row["npumon_s"]
                results.append(row)
                print(
                    f"{label:<40} {rows:>9,} rows: npumon {row['npumon_s']:.2f} s "
                    f"{row['npumon_mb']:.0f} MB | naive {row['naive_s']:.2f} s "
                    f"{row['naive_mb']:.0f} MB | {row['speedup']:.1f}x  ({row['detail']})",
                    flush=True,
                )
    print("budget at 1M rows: < 1 s, < 600 MB, >= 3x the naive baseline")
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "cases": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
