"""The kubelet pod-resources v1 API: generated protobuf messages and the method names.

``api.proto`` is kubernetes/kubelet ``pkg/apis/podresources/v1/api.proto`` at tag v0.36.3
(Kubernetes 1.36.3, commit bbb4f8f0907ace5f317f33e06413a55a5f4636f6), unchanged, Apache-2.0,
(c) The Kubernetes Authors. ``api_pb2.py`` and ``api_pb2.pyi`` were generated from it with
grpcio-tools 1.85.1 (libprotoc 35.1), from the repository root:

    python -m grpc_tools.protoc -I podresources --python_out=podresources \\
        --pyi_out=podresources podresources/api.proto

(tests/podresources/test_stubs.py regenerates them and fails when they differ). No service stubs
are generated: the client and the simulator's fake kubelet address the method by name.
This package imports nothing of npumon: the daemon and the simulator both use it.
"""

SERVICE = "v1.PodResourcesLister"
LIST_METHOD = f"/{SERVICE}/List"
