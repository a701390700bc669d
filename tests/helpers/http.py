"""GET from a server under test (always on 127.0.0.1, on the port it reported)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.helpers.wait import scaled


def get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=scaled(timeout)) as response:
        body: bytes = response.read()
        return body.decode()


def get_json(url: str, timeout: float = 5.0) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(get(url, timeout))
    return data
