"""The process node's kubelet pod-resources API: gRPC `v1.PodResourcesLister` on a unix socket, as every kubelet
serves it (k8s.io/kubelet@v0.37.2 pkg/apis/podresources/v1/api.proto) at /var/lib/kubelet/pod-resources/kubelet.sock.

koordlet with its `PodResourcesProxy` gate on (config/'s koordlet turns every alpha and beta gate on) refuses to
start without that socket (koordinator@v1.6.0 pkg/koordlet/statesinformer/impl/states_pod_resources.go,
util/kubelet/kubelet_resource_client.go) and proxies the API to its own clients. This node assigns no devices,
exclusive CPUs or memory (no device plugins; the CPU and memory managers are `none`, as `/configz` says), so each
answer is what a kubelet with those policies gives: `List` names every pod and container on the node with no
resources, `GetAllocatableResources` is empty, and `Get` names one pod or fails as the kubelet does when it is not
on the node (k8s.io/kubernetes@v1.37.2 pkg/kubelet/apis/podresources/server_v1.go). The messages are few and
flat, so they are encoded here by hand (protobuf wire format: tag, length, bytes) rather than generated.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

SERVICE = "v1.PodResourcesLister"
SOCKET = "var/lib/kubelet/pod-resources/kubelet.sock"  # under the node's host dir (`host.host_root`)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (string or embedded message); proto3 leaves an empty string out."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload if payload else b""


def _message(number: int, payload: bytes) -> bytes:
    """An embedded message, present even when empty (a repeated element must be)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def pod_resources(pod: dict[str, Any]) -> bytes:
    """PodResources{name=1, namespace=2, containers=3: ContainerResources{name=1}} of one pod."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    containers = b"".join(_message(3, _field(1, str(c.get("name", "")).encode())) for c in spec.get("containers") or [])
    return (
        _field(1, str(meta.get("name", "")).encode()) + _field(2, str(meta.get("namespace", "")).encode()) + containers
    )


def list_response(pods: list[dict[str, Any]]) -> bytes:
    """ListPodResourcesResponse{pod_resources=1}."""
    return b"".join(_message(1, pod_resources(pod)) for pod in pods)


def decode_strings(data: bytes) -> dict[int, str]:
    """The string fields of a flat message (GetPodResourcesRequest: pod_name=1, pod_namespace=2); other wire types
    are skipped."""
    fields: dict[int, str] = {}
    at = 0

    def varint() -> int:
        nonlocal at
        value, shift = 0, 0
        while True:
            if at >= len(data):
                raise ValueError("truncated varint")
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while at < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 2:
            length = varint()
            if at + length > len(data):
                raise ValueError("truncated field")
            fields[number] = data[at : at + length].decode()
            at += length
        elif wire == 0:
            varint()
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return fields


class PodResourcesLister:
    def __init__(self, pods: Callable[[], list[dict[str, Any]]]) -> None:
        self.pods = pods

    def list(self, _request: bytes, _context: grpc.ServicerContext) -> bytes:
        return list_response(self.pods())

    def allocatable(self, _request: bytes, _context: grpc.ServicerContext) -> bytes:
        return b""

    def get(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            wanted = decode_strings(request)
        except ValueError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed GetPodResourcesRequest: {exc}")
        name, namespace = wanted.get(1, ""), wanted.get(2, "")
        for pod in self.pods():
            meta = pod.get("metadata") or {}
            if (meta.get("name"), meta.get("namespace")) == (name, namespace):
                return _message(1, pod_resources(pod))  # GetPodResourcesResponse{pod_resources=1}
        context.abort(grpc.StatusCode.UNKNOWN, f"pod {name} in namespace {namespace} not found")
        raise AssertionError("unreachable: abort raises")

    def handler(self) -> grpc.GenericRpcHandler:
        methods = {"List": self.list, "GetAllocatableResources": self.allocatable, "Get": self.get}
        return grpc.method_handlers_generic_handler(
            SERVICE, {name: grpc.unary_unary_rpc_method_handler(method) for name, method in methods.items()}
        )


def serve(socket: Path, pods: Callable[[], list[dict[str, Any]]]) -> grpc.Server:
    """Start the API on unix socket `socket` (replacing a stale one); the caller stops the returned server."""
    socket.parent.mkdir(parents=True, exist_ok=True)
    socket.unlink(missing_ok=True)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="podresources"))
    server.add_generic_rpc_handlers((PodResourcesLister(pods).handler(),))
    server.add_insecure_port(f"unix:{socket}")
    server.start()
    return server
