"""Log setup: logfmt or JSON lines on stderr, npumon's own level, third-party loggers quiet.

npumon logs a line when something changes (a source fails or recovers, a capture fails, a
reload); routine success is DEBUG. Third-party loggers (asyncio, grpc) only pass warnings
unless the level is debug.

npumon's messages are ``key=%s`` templates; each argument is written as a logfmt value (plain
when it can be, else double-quoted; ``true``/``false``, a command as one string), the way
go-logfmt encodes them. A third-party message (asyncio, grpc, Python warnings)
is free text: it becomes one ``msg="..."`` value.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
import sys
import threading
import time
from pathlib import PurePath
from typing import IO, Literal

LogFormat = Literal["logfmt", "json"]
QUIET = ("asyncio", "grpc", "py.warnings")
_PAIR = re.compile(r"(\w+)=(\"(?:[^\"\\]|\\.)*\"|\S*)")
_PLAIN = re.compile(r"[^\s\"=\\]+")
_handler: logging.Handler | None = None  # the one setup_logging installed


class _Value(str):
    """An argument already written as a logfmt value: ``%s`` and ``%r`` both print it as is."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def logfmt_value(value: object) -> str:
    """``a`` plain, ``"a b"`` quoted (JSON escapes), ``true``, a command joined as one string."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, tuple | list) and all(isinstance(v, str | PurePath) for v in value):
        text = shlex.join(str(v) for v in value)
    elif isinstance(value, BaseException):
        text = f"{type(value).__name__}: {value}" if str(value) else type(value).__name__
    else:
        text = str(value)
    return text if _PLAIN.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def _own(record: logging.LogRecord) -> bool:
    return record.name == "npumon" or record.name.startswith("npumon.")


def _message(record: logging.LogRecord) -> str:
    """npumon's key=value message with logfmt values; a third-party message as ``msg=...``."""
    if not _own(record):
        return "msg=" + json.dumps(record.getMessage(), ensure_ascii=False)
    args = record.args
    if isinstance(args, tuple):
        args = tuple(
            a if isinstance(a, int | float) and not isinstance(a, bool) else _Value(logfmt_value(a))
            for a in args
        )
    return str(record.msg) % args if args else str(record.msg)


def _timestamp(record: logging.LogRecord) -> str:
    ms = int(record.msecs)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{ms:03d}Z"


class LogfmtFormatter(logging.Formatter):
    """``ts=... level=info logger=npumon.x event=... key=value`` (the message is already logfmt)."""

    def format(self, record: logging.LogRecord) -> str:
        line = (
            f"ts={_timestamp(record)} level={record.levelname.lower()} "
            f"logger={record.name} {_message(record)}"
        )
        if record.exc_info:
            line += " exception=" + json.dumps(self.formatException(record.exc_info))
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line; the message's key=value pairs become fields."""

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, object] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        message = _message(record) if _own(record) else record.getMessage()
        pairs = _PAIR.findall(message) if _own(record) else []
        if pairs and " ".join(f"{k}={v}" for k, v in pairs) == message:
            fields.update({k: json.loads(v) if v.startswith('"') else v for k, v in pairs})
        else:
            fields["msg"] = message
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        return json.dumps(fields)


def setup_logging(level: str, fmt: LogFormat = "logfmt", stream: IO[str] | None = None) -> None:
    """Configure the root logger once (calling again replaces the handler and the level)."""
    global _handler
    _handler = logging.StreamHandler(stream or sys.stderr)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(_handler)
    set_format(fmt)
    logging.captureWarnings(True)  # Python warnings as py.warnings lines, not bare stderr text
    threading.excepthook = _thread_exception  # a thread's traceback as one formatted line
    set_level(level)


def set_format(fmt: LogFormat) -> None:
    """logfmt or JSON on the handler ``setup_logging`` installed (a reload may switch it)."""
    if _handler is not None:
        _handler.setFormatter(JsonFormatter() if fmt == "json" else LogfmtFormatter())


def _thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "unknown"
    logging.getLogger("npumon").error(
        "event=thread_crashed thread=%s",
        name,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )


def set_level(level: str) -> None:
    """npumon's level; third-party loggers stay at warning unless npumon's is debug."""
    number = logging.getLevelName(level.upper())
    logging.getLogger().setLevel(number)
    for name in QUIET:
        logging.getLogger(name).setLevel(number if number <= logging.DEBUG else logging.WARNING)
