#!/usr/bin/env bash
# `make image-test`: build both image variants from the Dockerfile with buildah (no Docker daemon,
# no registry) and run each against the simulator's npu-smi (deploy/image/smoke.py).
#
# The base is Debian bookworm (Python 3.11, the python:3.11-slim-bookworm images' release) made
# with mmdebstrap, with a venv at /opt/py as the image's Python (Debian's own refuses pip
# install, PEP 668); it is passed as the Dockerfile's PYTHON_IMAGE, so every step after FROM is
# the Dockerfile's own. The base tar is cached in $IMAGE_CACHE (it takes minutes to build) and
# the base image in buildah's store; delete either to rebuild it.
# pip inside the build reaches PyPI with the machine's CA bundle (mounted, PIP_CERT), as the
# machine's own pip does behind a TLS-inspecting proxy.
# Prints each image's size as buildah's store has it (uncompressed).
set -euo pipefail
cd "$(dirname "$0")/../.."

export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}"
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
IMAGE_CACHE="${IMAGE_CACHE:-/var/tmp/npumon-image}"
BASE_IMAGE="${BASE_IMAGE:-localhost/npumon-base:bookworm}"
IMAGE="${IMAGE:-localhost/npumon:test}"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
SUITE=bookworm
PACKAGES=python3,python3-venv,ca-certificates,passwd  # passwd: the Dockerfile runs useradd

say() { echo "image-test: $*"; }

if ! buildah inspect --type image "$BASE_IMAGE" >/dev/null 2>&1; then
  if [ ! -s "$IMAGE_CACHE/base.tar" ]; then
    mkdir -p "$IMAGE_CACHE"
    say "building the $SUITE base into $IMAGE_CACHE/base.tar (mmdebstrap, a few minutes)"
    mmdebstrap --quiet --format=tar --variant=minbase --include="$PACKAGES" "$SUITE" \
      "$IMAGE_CACHE/base.tar.part"
    mv "$IMAGE_CACHE/base.tar.part" "$IMAGE_CACHE/base.tar"
  fi
  say "importing $IMAGE_CACHE/base.tar as $BASE_IMAGE"
  ctr=$(buildah from scratch)
  trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
  buildah add --quiet "$ctr" "$IMAGE_CACHE/base.tar" /
  buildah run "$ctr" -- python3 -m venv /opt/py
  buildah config \
    --env PATH=/opt/py/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env PIP_CERT="$CA_BUNDLE" "$ctr"
  buildah commit --quiet --rm "$ctr" "$BASE_IMAGE" >/dev/null
  trap - EXIT
fi

status=0
for variant in default profiling; do
  ref="$IMAGE"; [ "$variant" = default ] || ref="$IMAGE-$variant"
  say "building $ref (VARIANT=$variant, PYTHON_IMAGE=$BASE_IMAGE)"
  start=$(date +%s)
  previous=$(buildah images --quiet "$ref" 2>/dev/null || true)
  buildah bud --quiet --layers=false -v "$CA_BUNDLE:$CA_BUNDLE:ro" \
    --build-arg PYTHON_IMAGE="$BASE_IMAGE" --build-arg VARIANT="$variant" -t "$ref" . >/dev/null
  say "built $ref in $(( $(date +%s) - start )) s"
  # the image this tag named before (vfs keeps a full copy of every image)
  if [ -n "$previous" ] && [ "$previous" != "$(buildah images --quiet "$ref")" ]; then
    buildah rmi "$previous" >/dev/null || true
  fi
  ctr=$(buildah from --quiet "$ref")
  if buildah run --user root \
      -v "$PWD/deploy/image/npu-smi:/usr/local/bin/npu-smi:ro" \
      -v "$PWD/deploy/image/smoke.py:/smoke/smoke.py:ro" \
      "$ctr" -- python3 /smoke/smoke.py "$variant"; then :; else status=1; fi
  # the non-root mode (docs/privileges.md): the image's npumon user reads through npu-smi too
  if buildah run --user 9732:0 -v "$PWD/deploy/image/npu-smi:/usr/local/bin/npu-smi:ro" \
      "$ctr" -- npumon collect --once --config /etc/npumon/npumon.yaml \
      | grep -q '^npu_chip_info{'; then
    say "ok: npumon collect --once as the npumon user (9732)"
  else
    say "FAILED: npumon collect --once as the npumon user (9732)"; status=1
  fi
  buildah rm "$ctr" >/dev/null
done

# the size of each image and of the base under it (the Dockerfile's own layers are the difference)
size() { buildah images --noheading --format '{{.Size}}' "$1"; }
for ref in "$IMAGE" "$IMAGE-profiling" "$BASE_IMAGE"; do
  say "size $ref: $(size "$ref") (uncompressed)"
done
exit "$status"
