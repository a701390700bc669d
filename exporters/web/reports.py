"""GET /reports/<workload>.html and .json: the latest analysis page and JSON the daemon wrote in
its state directory's reports/ (daemon/analysis/worker.py writes them whole). Only a plain file
of that directory is read, by descriptor, without following a link (daemon/nofollow.py): a name
with a slash, a leading dot (the writer's .partial files) or a NUL is refused, as is a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import unquote

from npumon.daemon.nofollow import FILE_FLAGS, open_below

PREFIX = "/reports/"
TYPES = {".html": "text/html; charset=utf-8", ".json": "application/json"}
MAX_NAME = 255  # a file name's limit on Linux
MAX_BYTES = 64 << 20  # a report is far smaller; a bigger file is not one the daemon wrote
# the page is self-contained and loads nothing: the browser is told so again (html.py's CSP)
PAGE_HEADERS = (
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'"),
    (b"x-content-type-options", b"nosniff"),
)


def file_name(path: str) -> str | None:
    """The report's file name for a request path, or None when it names no report."""
    if not path.startswith(PREFIX):
        return None
    name = unquote(path[len(PREFIX) :], errors="strict")
    stem, dot, ext = name.rpartition(".")
    if not dot or f".{ext}" not in TYPES or not stem:
        return None
    if "/" in name or "\0" in name or name.startswith(".") or len(name.encode()) > MAX_NAME:
        return None
    return name


def read(reports: Path, name: str) -> bytes | None:
    """The bytes of ``reports/name`` when it is a regular file there, else None."""
    try:
        fd = open_below(reports, reports / name, FILE_FLAGS)
    except (OSError, ValueError):  # absent, a link, or a directory not there
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(MAX_BYTES + 1)


def content_type(name: str) -> str:
    return TYPES["." + name.rpartition(".")[2]]
