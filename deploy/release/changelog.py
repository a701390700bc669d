#!/usr/bin/env python3
"""The CHANGELOG.md section of one release, as its release notes.

    python3 deploy/release/changelog.py 0.2.0 > notes.md

The section is everything under the heading `## 0.2.0` (optionally followed by a space and
more, e.g. a date) up to the next `## ` heading, without the heading itself. A release whose
section is still headed `## Unreleased (0.2.0)` is refused: rename the heading when tagging.
Exit 1 with the reason when there is no such section or it is empty. Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

CHANGELOG = Path(__file__).resolve().parents[2] / "CHANGELOG.md"


class NoSection(Exception):
    pass


def section(text: str, version: str) -> str:
    """The body of `## <version>`, stripped; NoSection says why there is none."""
    heading = re.compile(rf"^## {re.escape(version)}(?: .*)?$", re.M)
    match = heading.search(text)
    if match is None:
        if re.search(rf"^## Unreleased \({re.escape(version)}\)$", text, re.M):
            raise NoSection(f"{version} is still headed '## Unreleased ({version})'")
        raise NoSection(f"no '## {version}' heading")
    following = re.compile(r"^## ", re.M).search(text, match.end())
    body = text[match.end() : following.start() if following else len(text)].strip()
    if not body:
        raise NoSection(f"the '## {version}' section is empty")
    return body + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("version", help="e.g. 0.2.0 (a leading v, as in a tag, is dropped)")
    parser.add_argument("--changelog", type=Path, default=CHANGELOG)
    args = parser.parse_args(argv)
    version = args.version.removeprefix("v")
    try:
        sys.stdout.write(section(args.changelog.read_text(), version))
    except NoSection as error:
        print(f"changelog.py: {args.changelog.name}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
