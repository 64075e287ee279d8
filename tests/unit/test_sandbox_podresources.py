"""The process node's pod-resources API over a real gRPC unix socket, in protobuf's wire format.

The expected bytes are written out by hand from the wire format (tag = field << 3 | 2, then length, then bytes) and
k8s.io/kubelet@v0.37.2 pkg/apis/podresources/v1/api.proto, so a mistake in the encoder cannot hide in the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from outpost_sandbox.kubelet import podresources

POD: dict[str, Any] = {"metadata": {"name": "a", "namespace": "b"}, "spec": {"containers": [{"name": "c"}]}}
# PodResources{name "a", namespace "b", containers [{name "c"}]}
POD_BYTES = bytes([0x0A, 0x01, 0x61, 0x12, 0x01, 0x62, 0x1A, 0x03, 0x0A, 0x01, 0x63])


def test_a_pod_is_encoded_as_the_proto_says() -> None:
    assert podresources.pod_resources(POD) == POD_BYTES
    assert podresources.list_response([POD, POD]) == (bytes([0x0A, len(POD_BYTES)]) + POD_BYTES) * 2
    assert podresources.list_response([]) == b""


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (bytes([0x0A, 0x01, 0x61, 0x12, 0x01, 0x62]), {1: "a", 2: "b"}),
        (bytes([0x08, 0x96, 0x01, 0x0A, 0x01, 0x61]), {1: "a"}),  # a varint field (150) skipped
        (b"", {}),
    ],
)
def test_a_get_request_is_decoded(data: bytes, expected: dict[int, str]) -> None:
    assert podresources.decode_strings(data) == expected


@pytest.mark.parametrize("data", [bytes([0x0A, 0x05, 0x61]), bytes([0x0A]), bytes([0x0B])])
def test_a_malformed_request_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match=r"truncated|unsupported"):
        podresources.decode_strings(data)


@pytest.fixture
def channel(tmp_path: Path) -> Iterator[grpc.Channel]:
    socket = tmp_path / "kubelet.sock"
    server = podresources.serve(socket, lambda: [POD])
    try:
        with grpc.insecure_channel(f"unix:{socket}") as opened:
            yield opened
    finally:
        server.stop(0)


def call(channel: grpc.Channel, method: str, request: bytes = b"") -> bytes:
    stub: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(f"/{podresources.SERVICE}/{method}")
    answer: bytes = stub(request, timeout=5)
    return answer


def test_list_allocatable_and_get_answer_over_the_socket(channel: grpc.Channel) -> None:
    assert call(channel, "List") == bytes([0x0A, len(POD_BYTES)]) + POD_BYTES
    assert call(channel, "GetAllocatableResources") == b""  # no devices; CPU and memory managers none
    assert call(channel, "Get", bytes([0x0A, 0x01, 0x61, 0x12, 0x01, 0x62])) == bytes([0x0A, 0x0B]) + POD_BYTES


def test_get_of_a_pod_not_on_the_node_fails_as_the_kubelet_does(channel: grpc.Channel) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        call(channel, "Get", bytes([0x0A, 0x01, 0x7A, 0x12, 0x01, 0x62]))
    assert raised.value.code() is grpc.StatusCode.UNKNOWN
    assert raised.value.details() == "pod z in namespace b not found"
