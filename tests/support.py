"""Paths and helpers shared by tests (importable as `tests.support`)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
FAKE_NPU_SMI = ROOT / "tests" / "fakes" / "fake_npu_smi.py"
NODES = FIXTURES / "nodes"


def fake_npu_smi(node: str, *options: str) -> list[str]:
    """The npu_smi.command argv prefix that replays a fixture node."""
    return [sys.executable, str(FAKE_NPU_SMI), "--node", str(NODES / node), *options]
