"""`npumon-sim-msprof`: a stand-in for CANN's msprof (dynamic attach with its prompt, export).

    npumon-sim-msprof --dynamic=on --pid=PID --output=DIR   # (msprof) start / stop / quit
    npumon-sim-msprof --export=on --output=PROF_DIR|PARENT

Failure injection: NPUMON_SIM_MSPROF_HANG=start|stop|export blocks that phase for an hour;
NPUMON_SIM_MSPROF_RAW_MB=N adds an N MiB raw file to every PROF dir written by `stop`;
NPUMON_SIM_MSPROF_EXPORT_MB=N has `--export` write N MiB more into every PROF dir, one MiB each
NPUMON_SIM_MSPROF_EXPORT_PACE seconds (CANN's export writes its tables as it goes, often several
times the raw data).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from npumon.simulator import prof_dir
from npumon.simulator.attach import Session, Target, TargetGone, find_target, socket_path

HANG_ENV = "NPUMON_SIM_MSPROF_HANG"
RAW_MB_ENV = "NPUMON_SIM_MSPROF_RAW_MB"
EXPORT_MB_ENV = "NPUMON_SIM_MSPROF_EXPORT_MB"
EXPORT_PACE_ENV = "NPUMON_SIM_MSPROF_EXPORT_PACE"
PROMPT = "(msprof) "
USAGE = """usage: npumon-sim-msprof --dynamic=on --pid=PID --output=DIR [--option=value ...]
       npumon-sim-msprof --export=on --output=PROF_DIR [--option=value ...]
"""


def hang_if(phase: str) -> None:
    """Block like a wedged driver call; the caller's timeout has to kill the process group."""
    if os.environ.get(HANG_ENV, "") == phase:
        time.sleep(3600)


def parse_options(argv: Sequence[str]) -> dict[str, str] | None:
    """msprof's ``--key=value`` options; None when something else is on the line."""
    options = {}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not key.startswith("--") or not sep:
            return None
        options[key[2:]] = value
    return options


def run_export(output: Path, out: TextIO) -> int:
    if not output.is_dir():
        print(f"[ERROR] [msprof] The path {output} does not exist.", file=out)
        return 1
    profs = prof_dir.find_prof_dirs(output)
    if not profs:
        print(f"[ERROR] [msprof] No PROF_* directory in {output}.", file=out)
        return 1
    hang_if("export")
    failed = 0
    for prof in profs:
        if prof_dir.is_exported(prof):
            print(f"[INFO] [msprof] {prof.name} has been exported already; skipped.", file=out)
            continue
        _export_extra(prof)
        try:
            prof_dir.export(prof, time.time())
        except prof_dir.IncompleteProf as error:
            print(f"[ERROR] [msprof] Export failed: {error}", file=out)
            failed += 1
            continue
        print(f"[INFO] [msprof] Export all data in {prof} done.", file=out)
    return 1 if failed else 0


def _export_extra(prof: Path) -> None:
    """EXPORT_MB_ENV MiB into ``prof``, a MiB at a time, EXPORT_PACE_ENV seconds apart."""
    mib = int(os.environ.get(EXPORT_MB_ENV, "0") or 0)
    pace = float(os.environ.get(EXPORT_PACE_ENV, "0") or 0)
    if mib <= 0:
        return
    with open(prof / "export_extra.bin", "wb") as extra:
        for _ in range(mib):
            extra.write(b"\0" * (1 << 20))
            extra.flush()
            time.sleep(pace)


def _command(session: Session, command: str, out: TextIO) -> bool:
    """One prompt command; False when the session ends."""
    if command == "start":
        hang_if("start")
        print(session.start(), file=out)
    elif command == "stop":
        hang_if("stop")
        print(session.stop(), file=out)
    elif command in ("quit", "exit"):
        if session.started:
            print(session.stop(), file=out)
        print("[INFO] [msprof] Dynamic profiling exits.", file=out)
        return False
    elif command:
        print(f"[ERROR] [msprof] Invalid command '{command}'. Use start, stop or quit.", file=out)
    return True


def _targets(pid_text: str, out: TextIO) -> list[Target] | None:
    """Every pid of ``--pid=a,b``, each alive and started with PROFILING_MODE=dynamic."""
    pids = pid_text.split(",")
    if not all(p.isdigit() for p in pids):
        print(f"[ERROR] [msprof] Invalid --pid={pid_text}: process ids expected.", file=out)
        return None
    targets = []
    for pid in map(int, pids):
        target = find_target(pid)
        if target is None:
            print(f"[ERROR] [msprof] The process {pid} does not exist. Check --pid.", file=out)
            return None
        socket = socket_path(pid)
        if not socket.exists():
            print(
                f"[ERROR] [msprof] The dynamic profiling socket {socket} of process {pid} is "
                "not found. Please start the application with export PROFILING_MODE=dynamic "
                "and retry.",
                file=out,
            )
            return None
        targets.append(target)
    return targets


def run_attach(pid_text: str, output: Path, stdin: TextIO, out: TextIO) -> int:
    targets = _targets(pid_text, out)
    if targets is None:
        return 1
    session = Session(targets, output, int(os.environ.get(RAW_MB_ENV, "0") or 0))
    print(f"[INFO] [msprof] Attached to process {pid_text}. Enter start, stop or quit.", file=out)
    try:
        while True:
            out.write(PROMPT)
            out.flush()
            line = stdin.readline()
            if not _command(session, line.strip() if line else "quit", out):
                return 0
            out.flush()
    except TargetGone as gone:
        print(f"[ERROR] [msprof] {gone}", file=out)
        return 2


def main(argv: list[str] | None = None) -> int:
    options = parse_options(sys.argv[1:] if argv is None else argv)
    out = sys.stdout
    if options is not None and options.get("dynamic") == "on" and "pid" in options:
        output = Path(options.get("output") or os.getcwd())
        code = run_attach(options["pid"], output, sys.stdin, out)
    elif options is not None and options.get("export") == "on" and options.get("output"):
        code = run_export(Path(options["output"]), out)
    else:
        sys.stderr.write(USAGE)
        return 2
    out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
