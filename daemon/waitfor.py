"""`python -m npumon.daemon.waitfor URL SECONDS`: wait until URL answers 200 (used by make demo)."""

from __future__ import annotations

import sys
import time
import urllib.error
import urllib.request


def wait_for(url: str, deadline_seconds: float) -> bool:
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)  # polling a process we do not control; there is no clock to advance
    return False


if __name__ == "__main__":
    sys.exit(0 if wait_for(sys.argv[1], float(sys.argv[2])) else 1)
