"""The editable install names the product trees npumon.* (tests/test_wheel.py holds the wheel
to the tree)."""

from __future__ import annotations

from tests.support import ROOT


def test_the_import_names_are_ours_not_python_daemon() -> None:
    import npumon.daemon
    import npumon.exporters

    assert npumon.daemon.__file__ == str(ROOT / "daemon" / "__init__.py")
    assert npumon.exporters.__file__ == str(ROOT / "exporters" / "__init__.py")
