# npumon: multi-stage image. The build stage makes a wheel; the runtime stage installs only it.
#
# npu-smi and its driver libraries come from the HOST, never from this image:
#   -v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro   (libdcmi and friends)
#   -v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro        (the tool itself)
#   --device /dev/davinci0 ... --device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc
#     (npu-smi opens the davinci devices; --privileged is not needed)
#   -v /etc/ascend_install.info:/etc/ascend_install.info:ro    (otherwise npu-smi prints a [WARNING])
#   --pid=host                                                 (npu-smi reports host PIDs)
# Privileges (docs/privileges.md): root with three capabilities,
#   --cap-drop ALL --cap-add DAC_OVERRIDE --cap-add DAC_READ_SEARCH --cap-add SYS_PTRACE
# or, without profiling of other users' jobs, the npumon user in the host's HwHiAiUser group:
#   --user 9732:<gid of HwHiAiUser> --cap-drop ALL
# Without root or that group every npu-smi call fails with "dcmi module initialize failed.
# ret is -8005", which npumon reports as reason="dcmi_init".
#
# Platforms: linux/amd64 and linux/arm64 (most Ascend hosts are aarch64 Kunpeng servers), one
# multi-platform image: `make image` (docker buildx build --platform linux/amd64,linux/arm64).
# - The base is the official Python image on Debian bookworm, published for both (glibc 2.36,
#   which the manylinux wheels of the compiled dependencies need at most).
# - The build stage runs on the build machine's own platform ($BUILDPLATFORM, no emulation):
#   it makes only npumon's wheel, which is pure Python (py3-none-any), so one wheel serves both.
# - The runtime stage runs on the target platform and installs the dependencies there, so pip
#   picks each compiled one's wheel for that platform (pydantic-core, psutil, bcrypt, PyYAML,
#   grpcio, protobuf, and in the profiling variant numpy and pandas: all have manylinux x86_64
#   and aarch64 wheels). It installs exactly the pins of a lock file (make lock), each checked
#   against its hashes, then npumon's wheel without resolving anything more.
# Variants (VARIANT): "default" leaves out the profiling analysis worker's pandas and numpy
# (requirements.lock); "profiling" carries them (requirements-profiling.lock, the
# npumon[profiling] extra): `make image` builds both, the chart picks the profiling one when
# profiling is enabled.
# - $BUILDPLATFORM is set by BuildKit (docker buildx, and docker build since Docker 23); the
#   legacy builder (DOCKER_BUILDKIT=0) leaves it empty and cannot build this file.
# - The driver path is the same on both (/usr/local/Ascend/driver/lib64), and npu-smi and
#   libdcmi come from the host's mount, built for the host's own architecture.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM --platform=$BUILDPLATFORM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY daemon ./daemon
COPY exporters ./exporters
COPY simulator ./simulator
COPY podresources ./podresources
COPY yamlfile ./yamlfile
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ARG VARIANT=default
COPY requirements.lock requirements-profiling.lock /locks/
COPY --from=build /wheels /wheels
RUN lock=/locks/requirements.lock; \
    if [ "$VARIANT" = profiling ]; then lock=/locks/requirements-profiling.lock; \
    elif [ "$VARIANT" != default ]; then echo "VARIANT must be default or profiling" >&2; exit 1; fi; \
    pip install --no-cache-dir --require-hashes --no-deps -r "$lock" \
    && pip install --no-cache-dir --no-deps /wheels/*.whl && rm -rf /wheels /locks
COPY config/npumon.yaml /etc/npumon/npumon.yaml
# the non-root mode's user; root (the default) can write its state directory too
RUN useradd --system --uid 9732 --no-create-home --shell /usr/sbin/nologin npumon \
    && install -d -m 0770 -o npumon -g root /var/lib/npumon
ENV LD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver
VOLUME /var/lib/npumon
EXPOSE 9732
ENTRYPOINT ["npumon"]
CMD ["run", "--config", "/etc/npumon/npumon.yaml"]
