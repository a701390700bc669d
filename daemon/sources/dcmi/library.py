"""Finding libdcmi.so as npu-exporter does, refusing a file others could have written, loading it.

Candidates, in order: the configured `dcmi.library`; else `<dir>/libdcmi.so` for each
LD_LIBRARY_PATH entry, the driver's two install directories, then the ldconfig cache. A candidate
is used only when the file and every directory above it are owned by root and writable by no one
else (a library is code run with the daemon's privileges). Loading (`load`) happens in the helper
process only: one dlopen, then one dlsym per function, a missing symbol leaving that function out.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from npumon.daemon.runner import run_command
from npumon.daemon.sources.wrapper import SourceFailure

LIBRARY_NAME = "libdcmi.so"
DRIVER_DIRECTORIES = (Path("/usr/local/Ascend/driver/lib64/driver"), Path("/usr/local/dcmi"))
LDCONFIG = ("/sbin/ldconfig", "--print-cache")


class LibraryRefused(SourceFailure):
    """No usable libdcmi.so: ``reason`` is the backend_info label, the message says what to do."""


@dataclass(frozen=True, slots=True)
class TrustPolicy:
    """Who must own the library and its directories; directories above ``checked_below`` are
    not looked at (tests build their fake under a world-writable /tmp)."""

    owner_uid: int = 0
    checked_below: Path = Path("/")


ROOT_ONLY = TrustPolicy()


def ldconfig_cache() -> str:
    """`ldconfig --print-cache`, or "" when it cannot run."""
    result = run_command(LDCONFIG, 5.0, max_output_bytes=4 * 1024 * 1024)
    return result.stdout if result.exit_code == 0 else ""


def candidates(environ: Mapping[str, str], ldconfig_output: str) -> list[Path]:
    """Where npu-exporter looks, in its order, without duplicates."""
    found = [Path(d) / LIBRARY_NAME for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    found += [d / LIBRARY_NAME for d in DRIVER_DIRECTORIES]
    for line in ldconfig_output.splitlines():
        name, _, target = line.strip().partition(" => ")
        if name.startswith(LIBRARY_NAME + " ") and target:
            found.append(Path(target))
    return list(dict.fromkeys(found))


def _check_one(path: Path, policy: TrustPolicy, what: str) -> None:
    info = path.lstat()
    if info.st_uid != policy.owner_uid:
        raise LibraryRefused(
            "library_refused",
            f"{what} {path} is owned by uid {info.st_uid}, "
            f"not {policy.owner_uid}: chown it to root or set dcmi.library",
        )
    if not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o022:
        raise LibraryRefused(
            "library_refused",
            f"{what} {path} is writable by group or others "
            f"(mode {stat.S_IMODE(info.st_mode):o}): chmod go-w it",
        )


def check_library(path: Path, policy: TrustPolicy = ROOT_ONLY) -> Path:
    """The resolved library path, or LibraryRefused naming the file or directory at fault."""
    if not path.is_absolute():
        raise LibraryRefused("library_refused", f"{path} is not an absolute path")
    try:
        if path.is_symlink():
            _check_one(path, policy, "symlink")
        real = path.resolve(strict=True)
        _check_one(real, policy, "library")
        for parent in real.parents:
            if parent != policy.checked_below and policy.checked_below not in parent.parents:
                break  # above the checked tree
            _check_one(parent, policy, "directory")
    except FileNotFoundError:
        raise LibraryRefused("library_not_found", f"{path} does not exist") from None
    except OSError as error:
        raise LibraryRefused("library_refused", f"cannot check {path}: {error}") from None
    return real


def find_library(
    configured: Path | None,
    policy: TrustPolicy = ROOT_ONLY,
    *,
    environ: Mapping[str, str] = os.environ,
    ldconfig: Callable[[], str] = ldconfig_cache,
) -> Path:
    """The first acceptable candidate; LibraryRefused with the first refusal when none is."""
    if configured is not None:
        return check_library(configured, policy)
    refusal: LibraryRefused | None = None
    paths = candidates(environ, "")
    for path in [*paths, *(p for p in candidates({}, ldconfig()) if p not in paths)]:
        try:
            return check_library(path, policy)
        except LibraryRefused as refused:
            if refused.reason != "library_not_found":
                refusal = refusal or refused
    raise refusal or LibraryRefused(
        "library_not_found",
        f"no {LIBRARY_NAME} in LD_LIBRARY_PATH, "
        f"{', '.join(map(str, DRIVER_DIRECTORIES))} or the ldconfig cache; set dcmi.library",
    )
