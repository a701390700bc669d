"""`npumon` command line: run, collect --once, check-config, analyze."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from npumon.daemon import __version__
from npumon.daemon.analysis.report import add_arguments as add_analyze_arguments
from npumon.daemon.analysis.report import run as run_analyze
from npumon.daemon.config import Config, ConfigError, load_config

log = logging.getLogger("npumon")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="npumon", description=__doc__)
    parser.add_argument("--version", action="version", version=f"npumon {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the agent and serve /metrics")
    run.add_argument("--config", type=Path, help="YAML config file (default: all defaults)")
    run.add_argument("--web.listen-address", dest="listen_address",
                     help="override web.listen_address, e.g. ':9732' or '127.0.0.1:9732'")
    run.add_argument("--web.config.file", dest="web_config_file", type=Path,
                     help="override web.config_file: an exporter-toolkit web-config.yml")
    run.add_argument("--web.max-requests", dest="max_requests", type=int,
                     help="override web.max_requests: in-flight requests before a 503")
    collect = sub.add_parser("collect", help="run every source once and print the exposition")
    collect.add_argument("--once", action="store_true", required=True,
                         help="required: collect once and exit")
    collect.add_argument("--config", type=Path)
    check = sub.add_parser("check-config", help="validate a config file; exit 0 or 1")
    check.add_argument("file", type=Path)
    analyze = sub.add_parser("analyze", help="analyse a profile directory on disk",
                             description="Analyse a profiler output directory.")
    add_analyze_arguments(analyze)
    return parser


def _load(path: Path | None) -> Config:
    return load_config(path) if path is not None else Config()


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), stream=sys.stderr,
        format="%(asctime)s level=%(levelname)s logger=%(name)s %(message)s",
    )


def _check_config(path: Path) -> int:
    from npumon.exporters.webconfig import WebConfigError, load_web_config

    try:
        config = load_config(path)
        if config.web.config_file is not None:
            load_web_config(config.web.config_file)
    except (ConfigError, WebConfigError) as error:
        print(f"{error.source}: {len(error.problems)} problem(s)", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    print(f"{path}: ok")
    return 0


def _collect(config: Config) -> int:
    from npumon.daemon.app import Agent

    agent = Agent(config)
    sys.stdout.write(agent.collect_once().decode())
    for status in agent.store.latest().sources:
        if not status.up:
            print(f"npumon: source {status.source} failed: {status.last_error}", file=sys.stderr)
    return 0 if agent.all_sources_up() else 1


def _with_web_flags(config: Config, args: argparse.Namespace) -> Config:
    """Command-line flags win over the config file's web section."""
    flags = {"listen_address": args.listen_address, "config_file": args.web_config_file,
             "max_requests": args.max_requests}
    web = config.web.model_copy(update={k: v for k, v in flags.items() if v is not None})
    return config.model_copy(update={"web": web})


def _run(config: Config) -> int:
    from npumon.daemon.app import Agent
    from npumon.exporters.http import serve
    from npumon.exporters.webconfig import WebConfigError, load_web_config

    try:
        if config.web.config_file is not None:
            load_web_config(config.web.config_file)  # refuse to start on a broken one
    except WebConfigError as error:
        print(f"npumon: {error}", file=sys.stderr)
        return 1
    agent = Agent(config)
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("event=stopping signal=%d", signum)
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    address = config.web.listen_address
    server = serve(agent.http_registry(), address, config.web.config_file, agent.running,
                   version=__version__, status=agent.status_line,
                   render_version=agent.store.latest, max_requests=config.web.max_requests)
    agent.start()
    log.info("event=listening address=%s port=%d tls=%s max_requests=%d", address, server.port,
             server.tls, config.web.max_requests)
    try:
        stop.wait()
    finally:
        agent.stop()
        server.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "check-config":
        return _check_config(args.file)
    if args.command == "analyze":
        return run_analyze(args)
    try:
        config = _load(args.config)
    except ConfigError as error:
        print(f"npumon: invalid config {error.source}:", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    _setup_logging(config.logging.level)
    if args.command == "collect":
        return _collect(config)
    return _run(_with_web_flags(config, args))


if __name__ == "__main__":
    sys.exit(main())
