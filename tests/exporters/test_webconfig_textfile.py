"""web-config.yml validation (every problem with its path) and the atomic textfile writer."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from exp_helpers import chip_910b, key, node, samples

from npumon.daemon.cli import main
from npumon.daemon.textfile import write_textfile
from npumon.exporters.collector import NpuCollector
from npumon.exporters.web.webconfig import WebConfigError, load_web_config

HASH = "$2y$10$" + "a" * 53  # well-formed; never checked here


def test_empty_file_is_plain_http(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text("")
    config = load_web_config(path)
    assert config.tls_server_config is None and config.basic_auth_users == {}


def test_valid_config_resolves_relative_files(tmp_path: Path) -> None:
    # Not real PEM: validation must then fail on loading, after the schema passed.
    (tmp_path / "c.pem").write_text("x")
    (tmp_path / "k.pem").write_text("x")
    path = tmp_path / "web.yml"
    path.write_text("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n")
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    assert caught.value.problems == [
        "tls_server_config: cannot load the certificate, key or CA: "
        + caught.value.problems[0].split("CA: ", 1)[1]
    ]


def test_every_problem_is_listed_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text(
        "tls_server_config:\n"
        "  cert_file: a.crt\n"  # key_file missing
        "  min_version: TLS99\n"
        "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"
        "  client_auth_type: RequestClientCert\n"
        "basic_auth_users:\n"
        f"  ok: '{HASH}'\n"
        "  alice: plaintext\n"
        "http_server_config:\n"
        "  headers: {X-Powered-By: me}\n"
        "colour: blue\n"
    )
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    paths = [p.split(": ", 2)[:2] for p in caught.value.problems]
    assert sorted(paths, key=lambda p: int(p[0].split()[1])) == [
        ["line 1", "tls_server_config.key_file"],  # missing: the line of its section
        ["line 3", "tls_server_config.min_version"],
        ["line 4", "tls_server_config.cipher_suites"],
        ["line 5", "tls_server_config.client_auth_type"],
        ["line 8", "basic_auth_users.alice"],
        ["line 10", "http_server_config.headers.X-Powered-By"],
        ["line 11", "colour"],
    ]
    assert str(path) in str(caught.value)
    assert any("not supported by npumon" in p for p in caught.value.problems)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("rate_limit: {interval: 1s}\n", "rate_limit: is valid for exporter-toolkit but not"),
        ("tls_server_config: {cert: x}\n", "tls_server_config.cert: is valid for exporter-"),
        (
            "tls_server_config: {client_auth_type: RequireAnyClientCert}\n",
            "RequireAnyClientCert is valid for exporter-toolkit but not supported by npumon; use",
        ),
    ],
)
def test_what_exporter_toolkit_knows_and_npumon_cannot_do_is_refused_by_name(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "web.yml"
    path.write_text(text)
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    assert any(p.startswith("line 1: ") and problem in p for p in caught.value.problems)


def test_a_user_name_with_a_colon_is_refused_on_its_line(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  ok: '{HASH}'\n  'a:b': '{HASH}'\n  '': '{HASH}'\n")
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    assert [p.split(": ", 1)[0] for p in caught.value.problems] == ["line 3", "line 4"]
    assert all("non-empty and without ':'" in p for p in caught.value.problems)
    assert not any("a:b" in p for p in caught.value.problems)  # a key that is no name is hidden


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ("{X-Frame-Options: bogus}", "X-Frame-Options must be deny or sameorigin"),
        ("{X-Frame-Options: DENY}", "X-Frame-Options must be deny or sameorigin"),
        ("{X-Content-Type-Options: sniff}", "X-Content-Type-Options must be nosniff"),
        ('{X-XSS-Protection: "1\\r\\nSet-Cookie: a=b"}', "X-XSS-Protection: the value must be"),
    ],
)
def test_header_values_are_checked_as_exporter_toolkit_does(
    tmp_path: Path, headers: str, problem: str
) -> None:
    path = tmp_path / "web.yml"
    path.write_text(f"http_server_config:\n  headers: {headers}\n")
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    [message] = caught.value.problems
    assert message.startswith("line 2: http_server_config.headers: ") and problem in message
    assert "bogus" not in message  # the key is named, the value not quoted


def test_header_values_exporter_toolkit_accepts(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text(
        "http_server_config:\n  headers:\n    X-Frame-Options: sameorigin\n"
        "    X-Content-Type-Options: nosniff\n    Strict-Transport-Security: max-age=31536000\n"
    )
    assert len(load_web_config(path).http_server_config.headers) == 3


def test_missing_files_and_ca_are_reported_together(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text(
        "tls_server_config:\n  cert_file: no.crt\n  key_file: /nonexistent/no.key\n"
        "  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS13\n"
        "  max_version: TLS12\n"
    )
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    problems = caught.value.problems
    assert problems == [
        "tls_server_config.client_ca_file: required when client_auth_type verifies certs",
        "tls_server_config.min_version: TLS13 is above max_version",
        "tls_server_config.cert_file: cannot read the file it names",
        "tls_server_config.key_file: cannot read the file it names",
    ]


def test_not_yaml_mapping_or_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "web.yml"
    path.write_text("- a list\n")
    with pytest.raises(WebConfigError, match=r"\(top level\)"):
        load_web_config(path)
    with pytest.raises(WebConfigError, match="No such file"):
        load_web_config(tmp_path / "absent.yml")


def _body() -> bytes:
    snap = node(chip_910b())
    return NpuCollector(lambda: snap, "1.2.3").exposition()


def test_textfile_is_written_atomically(tmp_path: Path) -> None:
    target = tmp_path / "npumon.prom"
    target.write_text("old\n")
    write_textfile(_body(), target)
    got = samples(target.read_bytes())
    assert got[key("npu_power_watts", npu="0", chip="0")] == pytest.approx(78.2)
    assert os.listdir(tmp_path) == ["npumon.prom"]  # no temporary file left behind
    assert target.stat().st_mode & 0o777 == 0o644


def test_textfile_failure_keeps_old_file_and_names_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "npumon.prom"
    target.write_text("old\n")

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError, match="disk full") as caught:
        write_textfile(_body(), target)
    assert caught.value.errno == errno.ENOSPC
    assert str(target) in str(caught.value)
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["npumon.prom"]


def test_textfile_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="cannot write textfile"):
        write_textfile(_body(), tmp_path / "no" / "npumon.prom")


def test_client_ca_without_client_auth_type_is_refused(tmp_path: Path) -> None:
    # exporter-toolkit refuses it ("client CA's have been configured without a Client Auth
    # Policy"); served anyway, clients without a certificate got in.
    for name in ("c.pem", "k.pem", "ca.pem"):
        (tmp_path / name).write_text("x")
    path = tmp_path / "web.yml"
    path.write_text(
        "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  client_ca_file: ca.pem\n"
    )
    with pytest.raises(WebConfigError) as caught:
        load_web_config(path)
    assert caught.value.problems[0].startswith(
        "tls_server_config.client_ca_file: set without client_auth_type"
    )


def _check_config(tmp_path: Path, web: str | None, capsys: pytest.CaptureFixture[str]) -> str:
    """`npumon check-config` on a config pointing at web.yml (written unless ``web`` is None)."""
    web_file = tmp_path / "web.yml"
    if web is not None:
        web_file.write_text(web)
    config = tmp_path / "npumon.yaml"
    config.write_text(f"web:\n  config_file: {web_file}\n")
    code = main(["check-config", str(config)])
    out, err = capsys.readouterr()
    return f"{code} {out}{err}"


@pytest.mark.parametrize(
    ("web", "message"),
    [
        (None, "No such file"),
        ("basic_auth_users: [a, b\n", "not valid YAML at"),
        ("basic_auth_users:\n  prom: secret\n", "basic_auth_users.prom: Value error, not a bcrypt"),
        (  # bcrypt refuses a cost under 4; passed, it would fail only at the first request
            "basic_auth_users:\n  prom: '$2b$03$" + "a" * 53 + "'\n",
            "basic_auth_users.prom: Value error, bcrypt cost 3 is below bcrypt's least (4)",
        ),
        (  # valid for bcrypt (4..31), over npumon's limit: 8 times cost 14's check
            "basic_auth_users:\n  prom: '$2b$17$" + "a" * 53 + "'\n",
            "basic_auth_users.prom: Value error, bcrypt cost 17 is above npumon's limit of 14",
        ),
        (  # Arabic-Indic "10": the old \d took it, then startup blamed the listen address
            "basic_auth_users:\n  prom: '$2b$\u0661\u0660$" + "a" * 53 + "'\n",
            "basic_auth_users.prom: Value error, not a bcrypt hash",
        ),
        ("tls_server_config: {cert_file: no.crt, key_file: no.key}\n", "cannot read"),
    ],
)
def test_check_config_checks_the_web_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], web: str | None, message: str
) -> None:
    result = _check_config(tmp_path, web, capsys)
    assert result.startswith("1 ") and message in result, result
    assert str(tmp_path / "web.yml") in result


def test_check_config_accepts_a_good_web_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _check_config(tmp_path, f"basic_auth_users:\n  prom: '{HASH}'\n", capsys).startswith(
        "0 "
    )


def test_check_config_reports_an_unreadable_web_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "web.yml").mkdir()  # unreadable as a file, even for root
    result = _check_config(tmp_path, None, capsys)
    assert result.startswith("1 ") and "Is a directory" in result, result
