# npumon: multi-stage image. The build stage makes a wheel; the runtime stage installs only it.
#
# npu-smi and its driver libraries come from the HOST, never from this image:
#   -v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro   (libdcmi and friends)
#   -v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro        (the tool itself)
#   --device /dev/davinci0 ... --device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc
#     (or --privileged; npu-smi opens the davinci devices)
#   -v /etc/ascend_install.info:/etc/ascend_install.info:ro    (otherwise npu-smi prints a [WARNING])
# npu-smi needs root (or the HwHiAiUser group): without it every call fails with
# "dcmi module initialize failed. ret is -8005", which npumon reports as reason="dcmi_init".
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY daemon ./daemon
COPY exporters ./exporters
COPY simulator ./simulator
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
COPY config/npumon.yaml /etc/npumon/npumon.yaml
ENV LD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver
VOLUME /var/lib/npumon
EXPOSE 9732
ENTRYPOINT ["npumon"]
CMD ["run", "--config", "/etc/npumon/npumon.yaml"]
