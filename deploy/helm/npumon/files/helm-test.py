"""`helm test <release>`: scrape every npumon pod behind the chart's headless Service.

Run by templates/tests/scrape.yaml in the npumon image (its Python, no other image to pull).
Each address the Service name resolves to (one per node's pod) must answer /metrics with
npumon_build_info. With basic auth on and no credentials given, an anonymous /metrics must be
refused (401) and /-/healthy answer instead; with client certificates required and none given,
only the TCP port is checked (what the kubelet's probes do then). Exit 0 when every pod passes.

Environment: NPUMON_TEST_HOST, NPUMON_TEST_PORT, NPUMON_TEST_SCHEME (http or https),
NPUMON_TEST_USERNAME and NPUMON_TEST_PASSWORD (optional), NPUMON_TEST_CLIENT_CERT and
NPUMON_TEST_CLIENT_KEY (optional files), NPUMON_TEST_TCP_ONLY ("true": port check only),
NPUMON_TEST_DEADLINE (seconds to keep retrying, default 60).
"""

from __future__ import annotations

import base64
import os
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request

FAMILY = "npumon_build_info"


def addresses(host: str, port: int) -> list[str]:
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return []
    return sorted({str(info[4][0]) for info in found})


def opener(scheme: str) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = []
    if scheme == "https":
        # The pod's certificate names the node or Service, never the pod IP dialled here; the
        # test checks that TLS is served, the scraper's tls_config checks the chain.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        cert, key = (
            os.environ.get("NPUMON_TEST_CLIENT_CERT"),
            os.environ.get("NPUMON_TEST_CLIENT_KEY"),
        )
        if cert and key:
            context.load_cert_chain(cert, key)
        handlers.append(urllib.request.HTTPSHandler(context=context))
    return urllib.request.build_opener(*handlers)


def get(client: urllib.request.OpenerDirector, url: str, auth: str | None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", auth)
    try:
        with client.open(request, timeout=10) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


def check(address: str) -> str | None:
    """None when the pod at address passes, else what is wrong."""
    port = int(os.environ["NPUMON_TEST_PORT"])
    if os.environ.get("NPUMON_TEST_TCP_ONLY") == "true":
        with socket.create_connection((address, port), timeout=10):
            return None
    scheme = os.environ.get("NPUMON_TEST_SCHEME", "http")
    base = f"{scheme}://{address if ':' not in address else f'[{address}]'}:{port}"
    user, password = os.environ.get("NPUMON_TEST_USERNAME"), os.environ.get("NPUMON_TEST_PASSWORD")
    auth = None
    if user and password:
        auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    client = opener(scheme)
    status, body = get(client, base + "/metrics", auth)
    if status == 200:
        return None if f"\n{FAMILY}" in "\n" + body else f"/metrics has no {FAMILY}"
    if status == 401 and auth is None:
        health, _ = get(client, base + "/-/healthy", None)
        return None if health == 200 else f"/metrics 401 and /-/healthy {health}"
    return f"/metrics answered {status}"


def main() -> int:
    host, port = os.environ["NPUMON_TEST_HOST"], int(os.environ["NPUMON_TEST_PORT"])
    deadline = time.monotonic() + float(os.environ.get("NPUMON_TEST_DEADLINE", "60"))
    while True:
        found = addresses(host, port)
        problems: dict[str, str] = {}
        for address in found:
            try:
                problem = check(address)
            except OSError as error:
                problem = str(error)
            if problem is not None:
                problems[address] = problem
        if found and not problems:
            print(f"ok: {len(found)} npumon pod(s) behind {host} answered")
            return 0
        if time.monotonic() >= deadline:
            if not found:
                print(f"FAILED: {host} resolves to no pod", file=sys.stderr)
            for address, problem in sorted(problems.items()):
                print(f"FAILED: {address}:{port}: {problem}", file=sys.stderr)
            return 1
        time.sleep(2)


if __name__ == "__main__":
    sys.exit(main())
