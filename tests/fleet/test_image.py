"""The Dockerfile's platform assumptions, checked without a docker daemon: one image for
linux/amd64 and linux/arm64 (`make image`). The build stage runs on the build machine's platform
and makes only npumon's wheel, so that wheel must be pure Python and buildable from exactly what
the stage copies; the runtime stage installs the dependencies for the target platform, so the
base must be a glibc (manylinux) image new enough for their wheels."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers.wait import scaled
from tests.helpers.wheel import pip_wheel

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PLATFORMS = "linux/amd64,linux/arm64"
# glibc of the Debian release each python:*-slim-<release> base is built on
GLIBC = {"bookworm": (2, 36), "trixie": (2, 41)}
# the old manylinux names (PEP 600)
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments out."""
    text = re.sub(
        r"\\\n\s*",
        " ",
        "\n".join(line for line in DOCKERFILE.splitlines() if not line.lstrip().startswith("#")),
    )
    result = []
    for line in text.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            result.append((word.upper(), rest.strip()))
    return result


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for instruction in instructions():
        if instruction[0] == "FROM":
            found.append([])
        if found:
            found[-1].append(instruction)
    return found


def base_image() -> str:
    [image] = [
        rest.split("=", 1)[1]
        for word, rest in instructions()
        if word == "ARG" and rest.startswith("PYTHON_IMAGE=")
    ]
    return image


def test_both_stages_use_the_multi_platform_python_base() -> None:
    image = base_image()
    # the official image (docker.io/library/python) is published for amd64 and arm64v8; alpine
    # (musl) could not use the dependencies' manylinux wheels
    match = re.fullmatch(r"python:(\d+\.\d+)-slim-(\w+)", image)
    assert match, image
    version, release = match.groups()
    assert release in GLIBC, f"{image}: which glibc does {release} have?"
    assert PYPROJECT["project"]["requires-python"] == f">={version}"
    froms = [stage[0][1] for stage in stages()]
    assert froms == ["--platform=$BUILDPLATFORM ${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]


def test_the_build_platform_stage_makes_only_npumons_own_wheel() -> None:
    build, runtime = stages()
    [wheel] = [rest for word, rest in build if word == "RUN"]
    # --no-deps: a dependency's wheel built here would be for the build machine's platform
    assert wheel.startswith("pip wheel ") and "--no-deps" in wheel.split()
    assert ("COPY", "--from=build /wheels /wheels") in runtime
    assert not PYPROJECT["tool"]["setuptools"].get("ext-modules")  # no C extension of ours


def test_no_architecture_is_hard_coded() -> None:
    for word, rest in instructions():
        assert not re.search(r"x86_64|amd64|aarch64|arm64|i386", rest), (word, rest)


def test_the_build_stage_copies_every_package_directory() -> None:
    """setup.py finds the packages under every top-level folder with an __init__.py (the product
    trees, tests/test_wheel.py), so the stage copies setup.py and each of those folders."""
    build, _ = stages()
    copied = {source for word, rest in build if word == "COPY" for source in rest.split()[:-1]}
    sources = {"pyproject.toml", "setup.py"} | {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert sources <= copied, f"the Dockerfile does not copy {sorted(sources - copied)}"


def _runtime_distributions() -> set[str]:
    """npumon's runtime dependencies and theirs, as installed here (no extras)."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += [Requirement(r) for r in metadata.requires(name) or []]
    return seen


def _glibc_needed(tag: str) -> tuple[int, int]:
    platform = tag.split("-")[-1]
    if platform in {"any"}:
        return (0, 0)
    for legacy, glibc in LEGACY_MANYLINUX.items():
        if platform.startswith(legacy + "_"):
            return glibc
    match = re.match(r"manylinux_(\d+)_(\d+)_", platform)
    assert match, f"{tag}: not a manylinux (glibc) wheel"
    return int(match.group(1)), int(match.group(2))


def test_compiled_dependencies_have_wheels_the_base_can_load() -> None:
    """The wheels pip chose here (x86_64) for each compiled dependency need a glibc the base
    has; their aarch64 builds carry the same or lower manylinux tags on PyPI."""
    glibc = GLIBC[base_image().rsplit("-", 1)[1]]
    compiled = {}
    for name in _runtime_distributions():
        wheel = metadata.distribution(name).read_text("WHEEL") or ""
        if "Root-Is-Purelib: false" in wheel:
            tags = re.findall(r"^Tag: (\S+)", wheel, re.MULTILINE)
            compiled[name] = max(_glibc_needed(t) for t in tags)
    assert {"pydantic-core", "psutil", "bcrypt", "pyyaml", "grpcio"} <= set(compiled)
    too_new = {n: v for n, v in compiled.items() if v > glibc}
    assert not too_new, f"these need a newer glibc than {base_image()}'s {glibc}: {too_new}"
    named = re.sub(r"\s*#\s*", " ", DOCKERFILE).lower()
    unnamed = [n for n in compiled if n not in named and n.replace("-", "") not in named]
    assert not unnamed, (
        f"compiled dependencies {unnamed}: check they have aarch64 wheels and "
        "name them in the Dockerfile's header"
    )


def test_make_image_and_the_readme_build_both_platforms() -> None:
    # not the flags of a make this test may run under (make test-fast)
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    result = subprocess.run(
        [
            "make",
            "-n",
            "--no-print-directory",
            "image",
            "IMAGE=registry.example/npumon:1",
            "IMAGE_OUTPUT=--push",
        ],
        capture_output=True,
        text=True,
        timeout=scaled(30),
        check=False,
        cwd=ROOT,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    builds = [line for line in result.stdout.splitlines() if line.startswith("docker buildx")]
    assert builds == [
        f"docker buildx build --platform {PLATFORMS} -t registry.example/npumon:1 --push .",
        f"docker buildx build --platform {PLATFORMS} --build-arg VARIANT=profiling "
        "-t registry.example/npumon:1-profiling --push .",
    ]
    assert "image-sizes" in result.stdout
    install = (ROOT / "docs" / "install.md").read_text()
    assert re.search(
        rf"^docker buildx build --platform {PLATFORMS} -t \S+ --push \.$", install, re.MULTILINE
    )


def test_the_runtime_library_path_is_the_charts() -> None:
    [env] = [rest for word, rest in instructions() if word == "ENV"]
    driver = "/usr/local/Ascend/driver"
    assert env == f"LD_LIBRARY_PATH={driver}/lib64:{driver}/lib64/common:{driver}/lib64/driver"


@pytest.mark.integration
def test_the_wheel_builds_from_what_the_build_stage_copies_and_is_pure(tmp_path: Path) -> None:
    build, _ = stages()
    context = tmp_path / "src"
    context.mkdir()
    for word, rest in build:
        if word == "COPY":
            *sources, destination = rest.split()
            for source in sources:
                target = context / (destination if destination != "./" else source)
                if (ROOT / source).is_dir():
                    shutil.copytree(
                        ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__")
                    )
                else:
                    shutil.copy(ROOT / source, target)
    wheel = pip_wheel(context, tmp_path / "wheels")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name


LOCKS = {"default": ROOT / "requirements.lock", "profiling": ROOT / "requirements-profiling.lock"}
HEAVY = {"pandas", "numpy"}


def pins(lock: Path) -> dict[str, str]:
    """name -> version of every `name==version` line, each followed by its --hash lines."""
    found = {}
    text = lock.read_text()
    for match in re.finditer(
        r"^([A-Za-z0-9._-]+)==(\S+) \\\n((?:\s+--hash=sha256:\w+.*\n)+)", text, re.M
    ):
        found[canonicalize_name(match[1])] = match[2]
    named = re.findall(r"^[A-Za-z0-9._-]+==", text, re.M)
    assert len(found) == len(named), f"{lock.name}: a pin without --hash lines"
    return found


def test_the_locks_pin_every_dependency_and_the_default_has_no_pandas() -> None:
    """make lock writes them from pyproject.toml: each dependency (and, in the profiling lock,
    the profiling extra's) pinned at a version its specifier admits; pandas and numpy only in
    the profiling lock."""
    project = PYPROJECT["project"]
    wanted = {
        "default": project["dependencies"],
        "profiling": project["dependencies"] + project["optional-dependencies"]["profiling"],
    }
    for variant, lock in LOCKS.items():
        pinned = pins(lock)
        for line in wanted[variant]:
            requirement = Requirement(line)
            name = canonicalize_name(requirement.name)
            assert name in pinned, f"{lock.name} has no pin for {name}: run `make lock`"
            assert requirement.specifier.contains(pinned[name], prereleases=True), (
                f"{lock.name} pins {name}=={pinned[name]}, outside {requirement}: run `make lock`"
            )
    assert not HEAVY & set(pins(LOCKS["default"]))
    assert set(pins(LOCKS["profiling"])) >= HEAVY
    assert "pandas" not in " ".join(PYPROJECT["project"]["dependencies"])


def test_the_runtime_stage_installs_a_lock_by_hash_then_the_wheel_alone() -> None:
    _, runtime = stages()
    copies = [rest for word, rest in runtime if word == "COPY"]
    assert "requirements.lock requirements-profiling.lock /locks/" in copies
    [install] = [rest for word, rest in runtime if word == "RUN" and "pip install" in rest]
    assert "--require-hashes --no-deps -r" in install
    assert "--no-deps /wheels/*.whl" in install
    assert ("ARG", "VARIANT=default") in runtime
