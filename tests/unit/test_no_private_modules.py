"""The product uses public APIs only: no private module of the standard library or of a
dependency is imported or reached through an attribute (e.g. ``asyncio.sslproto``)."""

from __future__ import annotations

import ast
import asyncio
import pkgutil

from tests.support import ROOT

PRODUCT = ("daemon", "exporters", "simulator", "podresources", "yamlfile")
# asyncio's public API is what the package itself exports; its submodules are its internals
ASYNCIO_INTERNALS = {m.name for m in pkgutil.iter_modules(asyncio.__path__)}


def private_uses(source: str) -> list[str]:
    """The private modules ``source`` imports or reaches: a dotted name with a part that
    starts with an underscore (``__future__`` apart), or any asyncio submodule."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "asyncio"
        ):
            names = [f"asyncio.{node.attr}"]
        for name in names:
            parts = name.split(".")
            if name == "__future__" or name.startswith("__future__."):
                continue
            private = any(part.startswith("_") for part in parts[:-1]) or (
                len(parts) > 1 and parts[0] == "asyncio" and parts[1] in ASYNCIO_INTERNALS
            )
            if private or (isinstance(node, ast.Import) and parts[-1].startswith("_")):
                found.append(name)
    return found


def test_the_check_sees_a_private_module() -> None:
    assert private_uses("from asyncio.sslproto import SSLProtocol") == [
        "asyncio.sslproto",
        "asyncio.sslproto.SSLProtocol",
    ]
    assert private_uses("import asyncio\nasyncio.sslproto.SSLProtocol") == ["asyncio.sslproto"]
    assert private_uses("from h11._util import bytesify") == ["h11._util.bytesify"]
    assert private_uses("import asyncio\nasyncio.get_running_loop()") == []


def test_no_product_module_uses_a_private_module() -> None:
    used = {
        str(path.relative_to(ROOT)): uses
        for folder in PRODUCT
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (uses := private_uses(path.read_text()))
    }
    assert used == {}


def test_the_product_folders_exist() -> None:  # so that the scan above cannot scan nothing
    assert all((ROOT / folder / "__init__.py").is_file() for folder in PRODUCT)
