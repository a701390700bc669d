"""`npumon` command line: run, collect --once, check-config, analyze, bundle, replay."""

from __future__ import annotations

import argparse
import functools
import gc
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from npumon.daemon import __version__
from npumon.daemon.analysis.report import add_arguments as add_analyze_arguments
from npumon.daemon.analysis.report import run as run_analyze
from npumon.daemon.config import (
    REPORTS,
    Config,
    ConfigError,
    load_config,
    log_deprecation,
    parse_config,
)
from npumon.daemon.fdlimit import raise_open_files_limit
from npumon.daemon.logs import setup_logging
from npumon.daemon.statelock import StateLockError, hold_state_lock

if TYPE_CHECKING:
    from npumon.daemon.supervisor import Supervisor

log = logging.getLogger("npumon")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="npumon", description=__doc__)
    parser.add_argument("--version", action="version", version=f"npumon {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    logs = argparse.ArgumentParser(add_help=False)
    logs.add_argument(
        "--log.level",
        dest="log_level",
        choices=("debug", "info", "warning", "error"),
        help="override logging.level",
    )
    logs.add_argument(
        "--log.format",
        dest="log_format",
        choices=("logfmt", "json"),
        help="override logging.format",
    )
    run = sub.add_parser("run", help="run the agent and serve /metrics", parents=[logs])
    run.add_argument("--config", type=Path, help="YAML config file (default: all defaults)")
    run.add_argument(
        "--web.listen-address",
        dest="listen_address",
        help="override web.listen_address, e.g. ':9732' or '127.0.0.1:9732'",
    )
    run.add_argument(
        "--web.systemd-socket",
        dest="systemd_socket",
        action="store_true",
        help="serve on the socket systemd passes (socket activation) instead of web.listen_address",
    )
    run.add_argument(
        "--web.config.file",
        dest="web_config_file",
        type=Path,
        help="override web.config_file: an exporter-toolkit web-config.yml",
    )
    run.add_argument(
        "--web.max-requests",
        dest="max_requests",
        type=int,
        help="override web.max_requests: in-flight requests before a 503",
    )
    run.add_argument(
        "--web.max-connections",
        dest="max_connections",
        type=int,
        help="override web.max_connections: open connections before new ones are closed",
    )
    collect = sub.add_parser(
        "collect", help="run every source once and print the exposition", parents=[logs]
    )
    collect.add_argument(
        "--once", action="store_true", required=True, help="required: collect once and exit"
    )
    collect.add_argument("--config", type=Path)
    bundle = sub.add_parser(
        "bundle",
        help="write this node's raw answers to one archive, for a bug report",
        parents=[logs],
    )
    bundle.add_argument("--config", type=Path)
    bundle.add_argument(
        "--output", "-o", type=Path, default=Path("npumon-bundle.tar.gz"), help="archive to write"
    )
    bundle.add_argument(
        "--no-redact",
        dest="redact",
        action="store_false",
        help="keep serials, IPs, MACs, host and pod names (secrets are removed regardless)",
    )
    bundle.add_argument(
        "--deadline", type=float, default=120.0, help="seconds for the whole bundle (120)"
    )
    bundle.add_argument(
        "--max-bytes", type=int, default=32 * 1024 * 1024, help="cap on recorded output (32 MiB)"
    )
    bundle.add_argument("--log-file", type=Path, help="a log file whose last lines to include")
    replay = sub.add_parser(
        "replay", help="serve a node back from its bundle (as run, or --once)", parents=[logs]
    )
    replay.add_argument("bundle", type=Path)
    replay.add_argument("--once", action="store_true", help="print one exposition and exit")
    replay.add_argument(
        "--web.listen-address", dest="listen_address", help="as for run (default ':9732')"
    )
    check = sub.add_parser("check-config", help="validate a config file; exit 0 or 1")
    check.add_argument("file", type=Path)
    analyze = sub.add_parser(
        "analyze",
        help="analyse a profile directory on disk",
        description="Analyse a profiler output directory.",
    )
    add_analyze_arguments(analyze)
    return parser


def _load(path: Path | None, deprecated: Callable[[str, str], None] = log_deprecation) -> Config:
    return load_config(path, deprecated) if path is not None else Config()


def _check_config(path: Path) -> int:
    from npumon.exporters.web.webconfig import WebConfigError, load_web_config

    def deprecated(source: str, message: str) -> None:
        print(f"{source}: warning: {message}", file=sys.stderr)

    try:
        config = load_config(path, deprecated)
        if config.web.config_file is not None:
            load_web_config(config.web.config_file)
    except (ConfigError, WebConfigError) as error:
        print(f"{error.source}: {len(error.problems)} problem(s)", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    if config.profiling.active():
        from npumon.daemon.profiling.launch import analysis_unavailable

        missing = analysis_unavailable()
        if missing is not None:
            print(f"{path}: warning: profiling is on but {missing}", file=sys.stderr)
    print(f"{path}: ok")
    return 0


def _with_flags(config: Config, args: argparse.Namespace) -> Config:
    """Command-line flags win over the config file (web and logging), also after a reload."""
    web_flags = {
        "listen_address": getattr(args, "listen_address", None),
        "config_file": getattr(args, "web_config_file", None),
        "max_requests": getattr(args, "max_requests", None),
        "max_connections": getattr(args, "max_connections", None),
    }
    log_flags = {"level": args.log_level, "format": args.log_format}
    data = config.model_dump()
    data["web"].update({k: v for k, v in web_flags.items() if v is not None})
    data["logging"].update({k: v for k, v in log_flags.items() if v is not None})
    return parse_config(data, "the command line")  # flags are validated like the file


class _Progress:
    """`collect --once` on stderr: nothing when it ends within a second, else a line per step
    (the steps of the first second once it has passed)."""

    def __init__(
        self,
        state: Callable[[str], str],
        *,
        after: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        stream: IO[str] | None = None,
    ) -> None:
        self._state, self._after, self._clock = state, after, clock
        self._stream = stream or sys.stderr
        self._started = clock()
        self._held: list[str] = []

    def __call__(self, step: str, seconds: float) -> None:
        self._held.append(f"npumon: collect: {step} {self._state(step)} in {seconds:.1f} s")
        if self._clock() - self._started > self._after:
            for line in self._held:
                print(line, file=self._stream, flush=True)
            self._held.clear()


def _collect(config: Config) -> int:
    from npumon.daemon.app import Agent

    agent = Agent(config)

    def state(step: str) -> str:
        found = [s.up for s in agent.store.latest().sources if s.source == step]
        return ("up" if found[0] else "down") if found else "off"

    sys.stdout.write(agent.collect_once(_Progress(state)).decode())
    for status in agent.store.latest().sources:
        if not status.up:
            print(f"npumon: source {status.source} failed: {status.last_error}", file=sys.stderr)
    return 0 if agent.all_sources_up() else 1


def _bundle(config: Config, args: argparse.Namespace) -> int:
    from npumon.daemon.bundle import take, write

    archive, manifest = take(
        config,
        redact=args.redact,
        deadline=args.deadline,
        max_bytes=args.max_bytes,
        log_file=args.log_file,
    )
    try:
        write(args.output, archive)
    except OSError as error:
        print(f"npumon: cannot write {args.output}: {error.strerror}", file=sys.stderr)
        return 1
    for cut in manifest["cut"]:
        print(f"npumon: bundle: {cut}", file=sys.stderr)
    print(f"{args.output}: {manifest['commands']} commands, {len(archive)} bytes")
    return 0


def _replay(args: argparse.Namespace) -> int:
    import tempfile

    from npumon.daemon.replay import BundleError, agent_options, read, replay_config

    try:
        bundle = read(args.bundle)
    except BundleError as error:
        print(f"npumon: {error}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="npumon-replay-") as state:
        config = _with_flags(replay_config(bundle, Path(state)), args)
        setup_logging(config.logging.level, config.logging.format)
        if args.once:
            from npumon.daemon.app import Agent

            agent = Agent(config, **agent_options(bundle))
            sys.stdout.write(agent.collect_once().decode())
            agent.chip_backend.close()
            return 0
        return _run(config, lambda: config, agent_options(bundle))


def _run(
    config: Config,
    load: Callable[[], Config],
    agent_options: dict[str, Any] | None = None,
    systemd_socket: bool = False,
) -> int:
    from npumon.daemon.app import Agent
    from npumon.daemon.supervisor import Supervisor
    from npumon.exporters.web.http import serve
    from npumon.exporters.web.http import systemd_socket as passed_socket
    from npumon.exporters.web.webconfig import WebConfigError, load_web_config

    try:
        if config.web.config_file is not None:
            load_web_config(config.web.config_file)  # refuse to start on a broken one
    except WebConfigError as error:
        print(f"npumon: {error}", file=sys.stderr)
        return 1
    raise_open_files_limit()  # connections, children's pipes and state files share it
    blocked = None  # why profiling cannot run: a state directory npumon cannot write
    try:  # one daemon per state directory; the lock is held until this process ends
        hold_state_lock(config.state_directory, create=config.profiling.active())
    except StateLockError as error:
        if error.held:
            print(f"npumon: {error}", file=sys.stderr)
            return 1
        blocked = str(error)  # the chips are still served: only profiling needs the directory
        log.warning("event=state_directory_unusable error=%r action=profiling_off", blocked)
    make_agent = functools.partial(Agent, blocked=blocked, **(agent_options or {}))
    supervisor = Supervisor(config, load, make_agent=make_agent)
    # What startup built (modules, config, the agent) lives as long as the process: leave it out
    # of the garbage collector's full passes, which a scrape's render would otherwise wait on.
    gc.freeze()
    signals = _SignalPipe((signal.SIGTERM, signal.SIGINT, signal.SIGHUP))
    address = "systemd" if systemd_socket else config.web.listen_address
    try:
        server = serve(
            supervisor.exposition,
            address,
            config.web.config_file,
            supervisor.healthy,
            version=__version__,
            latest=supervisor.latest,
            max_requests=config.web.max_requests,
            max_connections=config.web.max_connections,
            reports=config.state_directory / REPORTS,
            listening=passed_socket() if systemd_socket else None,
        )
    except (OSError, ValueError) as error:  # a taken port, an address this host does not have
        supervisor.stop()
        if systemd_socket:
            print(f"npumon: --web.systemd-socket: {error}", file=sys.stderr)
            return 1
        print(
            f"npumon: cannot listen on {address!r}: {getattr(error, 'strerror', None) or error}"
            "; pick another with --web.listen-address (or web.listen_address)",
            file=sys.stderr,
        )
        return 1
    supervisor.edge = server.connections.exposition
    supervisor.start()
    log.info(
        "event=listening address=%s port=%d tls=%s max_requests=%d max_connections=%d",
        address,
        server.port,
        server.tls,
        config.web.max_requests,
        server.connections.max_connections,  # in force: lowered under the open-file limit
    )
    try:
        _until_stopped(supervisor, signals)
    finally:
        supervisor.stop()
        server.shutdown()
    log.info("event=stopped")
    return 0


class _SignalPipe:
    """Signals as bytes on a pipe (`signal.set_wakeup_fd`), read by the main thread.

    A handler set with `signal.signal` runs only when the main thread runs Python code; if the
    kernel delivers the signal to another thread while the main thread blocks on a lock, it is
    not noticed. The wakeup fd is written by the C-level handler whatever thread it runs in.
    """

    def __init__(self, signums: tuple[int, ...]) -> None:
        self._read, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write)
        for signum in signums:
            signal.signal(signum, lambda *_: None)  # replaces the default action; the pipe tells

    def next(self) -> bytes:
        """Block until a signal arrives; the numbers of every signal pending by then."""
        while not (data := os.read(self._read, 1)):
            pass
        os.set_blocking(self._read, False)
        try:
            data += os.read(self._read, 4096)
        except BlockingIOError:
            pass
        finally:
            os.set_blocking(self._read, True)
        return data


def _until_stopped(supervisor: Supervisor, signals: _SignalPipe) -> None:
    """SIGHUP reloads; SIGTERM or SIGINT returns. SIGHUPs that came during a reload make one
    more reload, which reads the config as it is by then: one reload in flight, the last wins."""
    while True:
        pending = signals.next()
        stops = [signum for signum in pending if signum != signal.SIGHUP]
        if stops:
            log.info("event=stopping signal=%d", stops[0])
            return
        log.info("event=reloading signal=%d signals=%d", signal.SIGHUP, len(pending))
        supervisor.reload()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "check-config":
        return _check_config(args.file)
    if args.command == "analyze":
        return run_analyze(args)
    if args.command == "replay":
        return _replay(args)
    held: list[tuple[str, str]] = []  # logged once logging is set up from this very config
    try:
        config = _load(args.config, lambda *told: held.append(told))
    except ConfigError as error:
        print(f"npumon: invalid config {error.source}:", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    try:
        config = _with_flags(config, args)
    except ConfigError as error:
        print(f"npumon: invalid {error.source}: " + "; ".join(error.problems), file=sys.stderr)
        return 1
    setup_logging(config.logging.level, config.logging.format)
    for source, message in held:
        log_deprecation(source, message)
    if args.command == "collect":
        return _collect(config)
    if args.command == "bundle":
        return _bundle(config, args)
    return _run(
        config,
        lambda: _with_flags(_load(args.config), args),
        systemd_socket=getattr(args, "systemd_socket", False),
    )


if __name__ == "__main__":
    sys.exit(main())
