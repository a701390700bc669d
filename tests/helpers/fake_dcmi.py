"""The fake libdcmi.so (tests/fakes/dcmi/fake_dcmi.c) compiled with gcc into a temp dir."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.helpers.wait import scaled
from tests.support import ROOT

FAKE_DCMI = ROOT / "tests" / "fakes" / "dcmi"
STATE_ENV = "NPUMON_FAKE_DCMI_STATE"


def build_fake_dcmi(directory: Path, *omit: str, source: Path = FAKE_DCMI) -> Path:
    """``directory``/libdcmi.so, with the functions in ``omit`` left out (and with any, the
    v2 interface, whose calls read through the v1 ones)."""
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed for the fake libdcmi.so (apt-get install gcc; make tools does)"
    directory.mkdir(parents=True, exist_ok=True)
    library = directory / "libdcmi.so"
    subprocess.run(
        [
            gcc,
            "-std=c11",
            "-D_DEFAULT_SOURCE",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-shared",
            "-fPIC",
            # its v2 calls reach its own v1 functions, not those of another fake a test process
            # loaded before with RTLD_GLOBAL
            "-Wl,-Bsymbolic",
            "-O1",
            *(f"-DOMIT_{name}" for name in omit),
            *(("-DOMIT_dcmiv2",) if omit else ()),
            "-I",
            str(source),
            "-o",
            str(library),
            str(source / "fake_dcmi.c"),
        ],
        check=True,
        capture_output=True,
        timeout=scaled(120),
    )
    return library


def exported(library: Path) -> set[str]:
    """The dynamic symbols the library defines (`nm -D --defined-only`)."""
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)],
        check=True,
        capture_output=True,
        text=True,
        timeout=scaled(30),
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}
