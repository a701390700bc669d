"""A billion-laughs YAML document: small on disk, 9**9 values once its aliases are expanded."""

from __future__ import annotations


def billion_laughs(levels: int = 9) -> str:
    """Nine lists of nine aliases of the level below, ``levels`` deep."""
    lines = ['lol0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        aliases = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"lol{level}: &l{level} [{aliases}]")
    return "\n".join(lines) + "\n"
