"""GET /reports/<workload>.html and .json: the daemon's own report files, behind the same auth as
/metrics, read without following a link; 404 for anything else."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

import bcrypt

from npumon.exporters.web.edge import EdgeApp
from npumon.exporters.web.reports import file_name
from npumon.exporters.web.webconfig import WebConfig, parse_web_config
from npumon.exporters.web.weblive import LiveWebConfig


def _edge(reports: Path, config: WebConfig | None = None) -> EdgeApp:
    return EdgeApp(
        lambda openmetrics: b"x 1\n",
        LiveWebConfig(config),
        max_requests=2,
        healthy=lambda: True,
        latest=None,
        version="t",
        reports=reports,
    )


def _get(
    edge: EdgeApp, path: str, authorization: str | None = None
) -> tuple[int, dict[bytes, bytes], bytes]:
    headers = {"host": "x"} | ({"authorization": authorization} if authorization else {})

    async def one() -> tuple[int, dict[bytes, bytes], bytes]:
        gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        status, head, body = await edge("GET", path, headers, gone)
        return status, dict(head), body

    return asyncio.run(one())


def _reports(tmp_path: Path) -> Path:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "llama.html").write_text("<!DOCTYPE html><p>page</p>", encoding="utf-8")
    (reports / "llama.json").write_text('{"summary": {}}', encoding="utf-8")
    (reports / ".llama.html.partial").write_text("half", encoding="utf-8")
    return reports


def test_the_page_and_the_json_are_served(tmp_path: Path) -> None:
    edge = _edge(_reports(tmp_path))
    status, head, body = _get(edge, "/reports/llama.html")
    assert (status, body) == (200, b"<!DOCTYPE html><p>page</p>")
    assert head[b"content-type"] == b"text/html; charset=utf-8"
    assert b"default-src 'none'" in head[b"content-security-policy"]
    status, head, body = _get(edge, "/reports/llama.json")
    assert (status, head[b"content-type"], body) == (200, b"application/json", b'{"summary": {}}')
    edge.close()


def test_unknown_and_crafted_names_are_404(tmp_path: Path) -> None:
    reports = _reports(tmp_path)
    (tmp_path / "secret.html").write_text("root only", encoding="utf-8")
    os.symlink(tmp_path / "secret.html", reports / "link.html")
    (reports / "dir.html").mkdir()
    edge = _edge(reports)
    for path in (
        "/reports/other.html",  # no such workload
        "/reports/llama.txt",  # not a report type
        "/reports/.llama.html.partial",  # the writer's half-written file
        "/reports/..%2Fsecret.html",  # out of the directory
        "/reports/../secret.html",
        "/reports/link.html",  # a link, even to a readable file
        "/reports/dir.html",  # not a regular file
        "/reports/",
    ):
        status, _, body = _get(edge, path)
        assert status == 404, path
        assert b"root only" not in body
    edge.close()
    assert file_name("/reports/llama.html") == "llama.html"
    assert file_name("/reports/a%2Fb.html") is None


def test_no_reports_directory_is_404(tmp_path: Path) -> None:
    edge = _edge(tmp_path / "absent")
    assert _get(edge, "/reports/llama.html")[0] == 404
    edge.close()


def test_reports_need_the_same_auth_as_metrics(tmp_path: Path) -> None:
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    config = parse_web_config({"basic_auth_users": {"prom": hashed}}, base=tmp_path)
    edge = _edge(_reports(tmp_path), config)
    good = "Basic " + base64.b64encode(b"prom:pw").decode()
    assert _get(edge, "/reports/llama.html")[0] == 401
    assert _get(edge, "/reports/llama.html", good)[0] == 200
    edge.close()
