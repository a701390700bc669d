"""A page opened in Debian's headless Chromium, watched over the DevTools protocol.

Chromium started with ``--remote-debugging-pipe`` reads protocol commands on its fd 3 and
writes replies and events on its fd 4, each message JSON ended by a NUL byte (Chromium's
``--remote-debugging-pipe`` switch, chrome/browser/devtools/remote_debugging_server's pipe
handler): no port, no socket, no client library. ``load`` opens one page and returns what it
asked for (requests, console errors, uncaught exceptions, log errors such as a CSP violation)
and the value of a script run on the loaded page.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.wait import scaled

CHROMIUM = shutil.which("chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--remote-debugging-pipe",
)


def _env(workdir: Path) -> dict[str, str]:
    """The browser's home and caches in the temp dir: it writes nothing outside it."""
    home = str(workdir / "home")
    return {
        **os.environ,
        "HOME": home,
        "XDG_CONFIG_HOME": f"{home}/.config",
        "XDG_CACHE_HOME": f"{home}/.cache",
    }


@dataclass
class PageLoad:
    requests: list[str] = field(default_factory=list)  # URLs the page fetched or tried to
    blocked: list[str] = field(default_factory=list)  # URLs the browser refused (e.g. the CSP)
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, log errors
    value: Any = None  # what the probe script returned


class _Pipe:
    def __init__(self, write_fd: int, read_fd: int, deadline: float) -> None:
        self.write_fd, self.read_fd, self.deadline = write_fd, read_fd, deadline
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str = "") -> int:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        return self.next_id

    def read(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("chromium did not answer before the deadline")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 1 << 16)
                if not chunk:
                    raise AssertionError("chromium closed its DevTools pipe")
                self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        data: dict[str, Any] = json.loads(message)
        return data

    def call(self, method: str, params: dict[str, Any] | None = None, session: str = "") -> Any:
        wanted = self.send(method, params, session)
        while True:
            message = self.read()
            if message.get("id") == wanted:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def until(self, method: str) -> None:
        """Read events until ``method`` arrives (earlier ones are kept)."""
        while True:
            message = self.read()
            self.events.append(message)
            if message.get("method") == method:
                return


def _collect(events: list[dict[str, Any]], into: PageLoad) -> None:
    urls: dict[str, str] = {}
    refused = set()
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            urls[params["requestId"]] = params["request"]["url"]
        elif method == "Network.loadingFailed" and params.get("blockedReason"):
            refused.add(params["requestId"])  # never left the browser
        elif method == "Runtime.exceptionThrown":
            into.errors.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            into.errors.append(f"console.{params['type']}: {params.get('args')}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            into.errors.append(f"log: {params['entry'].get('text')}")
    into.requests = [url for key, url in urls.items() if key not in refused]
    into.blocked = [url for key, url in urls.items() if key in refused]


def load(
    page: Path,
    probe: str,
    workdir: Path,
    timeout: float = 90.0,
    viewport: tuple[int, int] | None = None,
) -> PageLoad:
    """Open ``page`` (a local file) and run ``probe`` (a JavaScript expression whose value is
    JSON) once it has loaded; ``workdir`` (a temp dir) holds the browser's profile;
    ``viewport`` (width, height) is the window the page is laid out in."""
    assert CHROMIUM is not None, "chromium is not installed: `make tools` installs it"
    to_browser, from_test = os.pipe()
    from_browser, to_test = os.pipe()

    def fds() -> None:  # the child's fd 3 reads commands, fd 4 writes replies
        os.dup2(to_browser, 3)
        os.dup2(to_test, 4)

    process = subprocess.Popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={workdir / 'chromium'}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=(workdir / "chromium.log").open("wb"),
        pass_fds=(3, 4),  # kept open after fds() made them the pipes
        preexec_fn=fds,
        env=_env(workdir),
    )
    os.close(to_browser)
    os.close(to_test)
    pipe = _Pipe(from_test, from_browser, time.monotonic() + scaled(timeout))
    result = PageLoad()
    try:
        target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Network", "Runtime", "Log", "Page"):
            pipe.call(f"{domain}.enable", session=session)
        if viewport is not None:
            width, height = viewport
            metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
            pipe.call("Emulation.setDeviceMetricsOverride", metrics, session=session)
        pipe.events.clear()  # about:blank's own events
        pipe.call("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        pipe.until("Page.loadEventFired")
        evaluated = pipe.call(
            "Runtime.evaluate", {"expression": probe, "returnByValue": True}, session=session
        )
        result.value = evaluated.get("result", {}).get("value")
        _collect(pipe.events, result)
        pipe.send("Browser.close")
    finally:
        os.close(from_test)
        os.close(from_browser)
        try:
            process.wait(timeout=scaled(30))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=scaled(30))
    return result


def screenshot(page: Path, out: Path, workdir: Path, width: int = 900, height: int = 2400) -> None:
    """A PNG of ``page`` as the headless browser draws it (``--screenshot``)."""
    assert CHROMIUM is not None, "chromium is not installed: `make tools` installs it"
    flags = [f for f in FLAGS if f != "--remote-debugging-pipe"]
    subprocess.run(
        [
            CHROMIUM,
            *flags,
            f"--user-data-dir={workdir / 'chromium-shot'}",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            f"--screenshot={out}",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=scaled(120),
        env=_env(workdir),
    )


if __name__ == "__main__":  # `python -m tests.helpers.browser PAGE.html OUT.png`: docs' screenshot
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        screenshot(Path(sys.argv[1]), Path(sys.argv[2]), Path(scratch), height=2000)
