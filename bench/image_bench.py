"""What each image variant's Python layer weighs, without a Docker daemon.

    python bench/image_bench.py [--json OUT]

Installs each lock file (requirements.lock: the default image; requirements-profiling.lock:
the profiling variant) into its own empty folder exactly as the Dockerfile's runtime stage
does (`pip install --require-hashes --no-deps -r <lock>`, then npumon's wheel with
--no-deps), for this machine's platform, and prints each folder's size with `du`. That is the
layer the Dockerfile adds on top of its python base image; the images themselves are not built.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"default": "requirements.lock", "profiling": "requirements-profiling.lock"}


def du_bytes(path: Path) -> int:
    """`du -sb`: the apparent size of everything under ``path``."""
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def pip(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args], check=True
    )


def measure(wheel: Path, lock: Path, work: Path) -> dict[str, object]:
    target = work / "site-packages"
    pip(
        "install",
        "--no-cache-dir",
        "--require-hashes",
        "--no-deps",
        "-r",
        str(lock),
        "--target",
        str(target),
    )
    # --upgrade: the lock already made target/bin; npumon adds its own scripts there
    pip("install", "--no-cache-dir", "--no-deps", "--upgrade", "--target", str(target), str(wheel))
    sizes = {p.name: du_bytes(p) for p in target.iterdir() if p.is_dir()}
    pins = [line.split("==")[0] for line in lock.read_text().splitlines() if "==" in line]
    return {
        "lock": lock.name,
        "bytes": du_bytes(target),
        "packages": pins,
        "largest": dict(sorted(sizes.items(), key=lambda item: -item[1])[:5]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="npumon-image-bench-") as tmp:
        wheels = Path(tmp) / "wheels"
        pip("wheel", "--no-deps", "--wheel-dir", str(wheels), str(ROOT))
        [wheel] = wheels.glob("*.whl")
        for variant, lock in VARIANTS.items():
            work = Path(tmp) / variant
            work.mkdir()
            results[variant] = measure(wheel, ROOT / lock, work)
            size = results[variant]["bytes"]  # type: ignore[index]
            print(f"{variant:10} {lock:30} {size / 1e6:7.1f} MB (du -sb of the installed layer)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
