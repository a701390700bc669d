"""Time `analyze_path` on a synthetic 1,000,000-row kernel_details and op_summary; print s and RSS.

Budget: < 3 s and < 600 MB peak each. Each analysis runs in its own child
process, so the peak RSS is the analysis's own (interpreter + pandas + data). The child reads
its own peak (RUSAGE_SELF) and that of its CSV worker processes (RUSAGE_CHILDREN, the largest
one); since the workers run side by side, the reported peak is the sum
``self + workers x largest worker``, an upper bound.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
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


def build(root: Path) -> tuple[Path, Path]:
    torch_root = root / "host_1234_20251127120000000_ascend_pt"
    (torch_root / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    write_table(
        torch_root / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv",
        KERNEL_HEADER,
        range(ROWS),
        step=True,
    )
    prof = root / "PROF_000001_20251127120000000_ABCDEFGHIJKLMNOP"
    out = prof / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    half = ROWS // 2  # two slices, as msprof writes large tables
    write_table(out / "op_summary_slice_0_20251127120001.csv", SUMMARY_HEADER, range(half), False)
    write_table(
        out / "op_summary_slice_1_20251127120002.csv", SUMMARY_HEADER, range(half, ROWS), False
    )
    return torch_root, prof


def measure(path: Path) -> tuple[float, float, str]:
    """(seconds of analyze_path, peak RSS in MB including its workers) of one child process."""
    child = subprocess.Popen(
        [sys.executable, __file__, "--child", str(path)], stdout=subprocess.PIPE, text=True
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
    from npumon.daemon.analysis import chunks
    from npumon.daemon.analysis.analysis import analyze_path

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
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    with tempfile.TemporaryDirectory(prefix="npumon-analysis-bench-") as tmp:
        started = time.perf_counter()
        torch_root, prof = build(Path(tmp))
        print(f"generated 2 x {ROWS:,} rows in {time.perf_counter() - started:.1f} s")
        for label, path in (("kernel_details", torch_root), ("op_summary (2 slices)", prof)):
            seconds, rss_mb, detail = measure(path)
            print(f"  {detail}")
            verdict = "OK" if seconds < 3.0 and rss_mb < 600 else "OVER BUDGET"
            print(
                f"{label:<24} {ROWS:,} rows: {seconds:.2f} s, peak RSS {rss_mb:.0f} MB "
                f"(budget 3 s, 600 MB) {verdict}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
