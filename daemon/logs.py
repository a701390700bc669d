"""Log setup: logfmt or JSON lines on stderr, npumon's own level, third-party loggers quiet.

npumon logs a line when something changes (a source fails or recovers, a capture fails, a
reload); routine success is DEBUG. The scheduler and the HTTP server would otherwise log every
job run and request, so their loggers only pass warnings unless the level is debug.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import IO, Literal

LogFormat = Literal["logfmt", "json"]
QUIET = ("apscheduler", "uvicorn", "uvicorn.error", "uvicorn.access", "asyncio", "grpc")
_PAIR = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\S*)")


def _timestamp(record: logging.LogRecord) -> str:
    ms = int(record.msecs)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{ms:03d}Z"


class LogfmtFormatter(logging.Formatter):
    """``ts=... level=info logger=npumon.x event=... key=value`` (the message is already logfmt)."""

    def format(self, record: logging.LogRecord) -> str:
        line = (f"ts={_timestamp(record)} level={record.levelname.lower()} "
                f"logger={record.name} {record.getMessage()}")
        if record.exc_info:
            line += " exception=" + json.dumps(self.formatException(record.exc_info))
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line; the message's key=value pairs become fields."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        fields: dict[str, object] = {"ts": _timestamp(record), "level": record.levelname.lower(),
                                     "logger": record.name}
        pairs = _PAIR.findall(message)
        if pairs and " ".join(f"{k}={v}" for k, v in pairs) == message:
            fields.update({k: v.strip("'\"") for k, v in pairs})
        else:
            fields["msg"] = message
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        return json.dumps(fields)


def setup_logging(level: str, fmt: LogFormat = "logfmt", stream: IO[str] | None = None) -> None:
    """Configure the root logger once (calling again replaces the handler and the level)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else LogfmtFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    set_level(level)


def set_level(level: str) -> None:
    """npumon's level; third-party loggers stay at warning unless npumon's is debug."""
    number = logging.getLevelName(level.upper())
    logging.getLogger().setLevel(number)
    for name in QUIET:
        logging.getLogger(name).setLevel(number if number <= logging.DEBUG else logging.WARNING)
