"""Finding libdcmi.so: npu-exporter's candidates and order, the ownership checks, the loading."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from npumon.daemon.sources.dcmi.child.abi import FUNCTIONS, load
from npumon.daemon.sources.dcmi.client import helper_environment
from npumon.daemon.sources.dcmi.library import (
    LibraryRefused,
    TrustPolicy,
    candidates,
    check_library,
    find_library,
)
from tests.helpers.fake_dcmi import build_fake_dcmi, exported

LDCONFIG = """\
1234 libs found in cache `/etc/ld.so.cache'
\tlibdcmi.so.1 (libc6,x86-64) => /opt/other/libdcmi.so.1
\tlibdcmi.so (libc6,x86-64) => /usr/lib64/libdcmi.so
\tlibz.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so
"""


def test_candidates_follow_npu_exporter_order() -> None:
    environ = {"LD_LIBRARY_PATH": "/a:/usr/local/dcmi::/b"}
    assert candidates(environ, LDCONFIG) == [
        Path("/a/libdcmi.so"),
        Path("/usr/local/dcmi/libdcmi.so"),
        Path("/b/libdcmi.so"),
        Path("/usr/local/Ascend/driver/lib64/driver/libdcmi.so"),
        Path("/usr/lib64/libdcmi.so"),
    ]


def _library(tmp_path: Path) -> Path:
    folder = tmp_path / "driver"
    folder.mkdir(mode=0o755)
    library = folder / "libdcmi.so"
    library.write_bytes(b"\x7fELF")
    library.chmod(0o444)
    return library


def _policy(tmp_path: Path) -> TrustPolicy:
    return TrustPolicy(owner_uid=os.getuid(), checked_below=tmp_path)


def test_an_owned_unwritable_library_is_accepted(tmp_path: Path) -> None:
    library = _library(tmp_path)
    assert check_library(library, _policy(tmp_path)) == library


def test_a_library_others_can_write_is_refused_with_the_reason(tmp_path: Path) -> None:
    library = _library(tmp_path)
    library.chmod(0o666)
    with pytest.raises(LibraryRefused, match="writable by group or others") as refused:
        check_library(library, _policy(tmp_path))
    assert refused.value.reason == "library_refused"


def test_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    library = _library(tmp_path)
    library.parent.chmod(0o775)
    with pytest.raises(LibraryRefused, match=f"directory {library.parent} is writable"):
        check_library(library, _policy(tmp_path))


def test_a_library_of_another_owner_is_refused(tmp_path: Path) -> None:
    library = _library(tmp_path)
    policy = TrustPolicy(owner_uid=os.getuid() + 1, checked_below=tmp_path)
    with pytest.raises(LibraryRefused, match=f"owned by uid {os.getuid()}"):
        check_library(library, policy)


def test_the_whole_path_is_checked_by_default(tmp_path: Path) -> None:
    """Under /tmp (mode 1777) nothing passes the default policy, as on a real node."""
    library = _library(tmp_path)
    with pytest.raises(LibraryRefused, match="directory /tmp is writable"):
        check_library(library, TrustPolicy(owner_uid=os.getuid()))


def test_a_symlink_is_checked_and_followed(tmp_path: Path) -> None:
    library = _library(tmp_path)
    link = tmp_path / "driver" / "libdcmi.so.link"
    link.symlink_to(library)
    assert check_library(link, _policy(tmp_path)) == library


def test_search_takes_the_first_acceptable_and_reports_a_refusal(tmp_path: Path) -> None:
    library = _library(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir(mode=0o777)
    bad.chmod(0o777)
    (bad / "libdcmi.so").write_bytes(b"")
    environ = {"LD_LIBRARY_PATH": f"{tmp_path}/missing:{bad}:{library.parent}"}
    found = find_library(None, _policy(tmp_path), environ=environ, ldconfig=lambda: "")
    assert found == library
    with pytest.raises(LibraryRefused, match=f"directory {bad} is writable"):
        find_library(
            None, _policy(tmp_path), environ={"LD_LIBRARY_PATH": str(bad)}, ldconfig=lambda: ""
        )


def test_nothing_found_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(LibraryRefused, match="set dcmi.library") as refused:
        find_library(None, _policy(tmp_path), environ={}, ldconfig=lambda: "")
    assert refused.value.reason == "library_not_found"


def test_a_configured_library_is_checked_too(tmp_path: Path) -> None:
    with pytest.raises(LibraryRefused, match="does not exist"):
        find_library(tmp_path / "none.so", _policy(tmp_path), environ={}, ldconfig=lambda: "")


@pytest.mark.integration
def test_the_fake_exports_every_symbol_the_helper_resolves(tmp_path: Path) -> None:
    library = build_fake_dcmi(tmp_path)
    assert set(FUNCTIONS) <= exported(library)
    functions, missing = load(library)
    assert set(functions) == set(FUNCTIONS) and missing == ()


@pytest.mark.integration
def test_a_missing_symbol_is_not_a_failed_load(tmp_path: Path) -> None:
    library = build_fake_dcmi(tmp_path, "dcmi_get_device_power_info")
    assert "dcmi_get_device_power_info" not in exported(library)
    functions, missing = load(library)
    # the fake leaves its v2 interface out with any v1 function
    assert [name for name in missing if not name.startswith("dcmiv2_")] == [
        "dcmi_get_device_power_info"
    ]
    assert "dcmi_get_device_temperature" in functions


def test_a_file_that_is_no_library_fails_dlopen(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        load(_library(tmp_path))


def test_the_helper_finds_the_drivers_other_libraries() -> None:
    library = Path("/usr/local/Ascend/driver/lib64/driver/libdcmi.so")
    env = helper_environment(library, {"LD_LIBRARY_PATH": "/opt/x:", "HOME": "/root"})
    assert env == {
        "HOME": "/root",
        "LD_LIBRARY_PATH": "/opt/x:/usr/local/Ascend/driver/lib64/"
        "driver:/usr/local/Ascend/driver/lib64/common",
    }
    assert helper_environment(library, env) == env
