"""The committed pod-resources stubs are what the committed proto generates (with the command in
podresources/__init__.py), and the messages round-trip."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from npumon.podresources.api_pb2 import ListPodResourcesResponse
from tests.helpers.wait import scaled
from tests.support import ROOT

HERE = ROOT / "podresources"


def test_the_committed_stubs_match_the_proto(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{HERE}",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            str(HERE / "api.proto"),
        ],
        check=True,
        timeout=scaled(60),
    )
    for name in ("api_pb2.py", "api_pb2.pyi"):
        assert (tmp_path / name).read_text() == (HERE / name).read_text(), name


def test_a_list_answer_round_trips() -> None:
    answer = ListPodResourcesResponse()
    pod = answer.pod_resources.add(name="p", namespace="ns")
    pod.containers.add(name="c").devices.add(
        resource_name="huawei.com/Ascend910", device_ids=["Ascend910-0"]
    )
    again = ListPodResourcesResponse.FromString(answer.SerializeToString())
    assert again.pod_resources[0].containers[0].devices[0].device_ids == ["Ascend910-0"]
