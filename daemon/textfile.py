"""Atomic exposition file for node_exporter's textfile collector (tmp file + os.replace)."""

from __future__ import annotations

import contextlib
import os
import tempfile


def write_textfile(body: bytes, path: str | os.PathLike[str]) -> None:
    """Replace ``path`` with ``body`` (text format) atomically; never leaves a partial file.

    The temporary file sits in the same directory (os.replace is atomic only within one
    file system) and does not end in .prom, so node_exporter never reads it half written.
    Raises OSError naming the path when writing fails.
    """
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(
            dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp"
        )
        with os.fdopen(fd, "wb") as out:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; node_exporter usually runs as another user
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise OSError(
            exc.errno,
            f"cannot write textfile {target}: {exc.strerror or exc}"
            " (disk full? read-only or missing directory? check free space and permissions)",
            target,
        ) from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
