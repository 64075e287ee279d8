"""The process node's kubelet API: HTTPS on the node's InternalIP:10250, the endpoints its node agents call.

koordlet reads its node's pods from the kubelet, not from the API server: `GET /pods/` every 10 s, and
`GET /configz` for the node's topology report, at the Node's InternalIP and `status.daemonEndpoints` port over
HTTPS with its ServiceAccount token, skipping certificate verification (koordinator@v1.6.0
pkg/koordlet/statesinformer/impl/states_pods.go, kubelet_stub.go). A real kubelet authenticates the token with
a TokenReview and authorizes `get nodes/proxy` with a SubjectAccessReview (webhook authn/authz, which the charts'
koordlet ClusterRole is written for): so does this one, caching answers for a minute as the kubelet caches them.
A client certificate signed by the sandbox CA (the API server's kubelet client) is authorized by its subject.
Anything else is 404; a refusal is 401 or 403 with the reason, and no token is ever logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("outpost_sandbox.kubelet.api")

PORT = 10250
AUTH_CACHE_S = 60.0
MAX_HEADER_BYTES = 64 * 1024

CONFIGZ: dict[str, Any] = {
    "kubeletconfig": {
        # KubeletConfiguration v1beta1 defaults (k8s.io/kubernetes pkg/kubelet/apis/config/v1beta1/defaults.go) for
        # what koordlet reads: the cgroup layout and the CPU manager (cpuManagerPolicy none: no pinned CPUs).
        "enableServer": True,
        "port": PORT,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": "/",
        "cgroupsPerQOS": True,
        "cpuManagerPolicy": "none",
        "cpuManagerReconcilePeriod": "10s",
        "topologyManagerPolicy": "none",
        "topologyManagerScope": "container",
        "memoryManagerPolicy": "None",
        "enforceNodeAllocatable": ["pods"],
        "kubeReserved": {},
        "systemReserved": {},
        "evictionHard": {
            "imagefs.available": "15%",
            "memory.available": "100Mi",
            "nodefs.available": "10%",
            "nodefs.inodesFree": "5%",
        },
    }
}

Review = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Creates a TokenReview or SubjectAccessReview (the body) on the API server and returns the answer; raises
ReviewError when the API server does not answer."""


class ReviewError(Exception):
    """The API server could not review a credential."""


class KubeletApi:
    def __init__(self, node_name: str, pods: Callable[[], list[dict[str, Any]]], review: Review) -> None:
        self.node_name = node_name
        self.pods = pods
        self.review = review
        self._decisions: dict[str, tuple[float, int, str]] = {}  # sha256(credential) -> (until, status, reason)

    async def serve(self, sock: socket.socket, context: ssl.SSLContext) -> asyncio.Server:
        return await asyncio.start_server(self._handle, sock=sock, ssl=context)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(30):
                head = await reader.readuntil(b"\r\n\r\n")
                if len(head) > MAX_HEADER_BYTES:
                    raise ValueError("headers too large")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _version = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)
                }
                status, body = await self.answer(method, path, headers, writer.get_extra_info("peercert"))
                data = json.dumps(body).encode() if not isinstance(body, str) else body.encode()
                kind = "application/json" if not isinstance(body, str) else "text/plain; charset=utf-8"
                writer.write(
                    f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: {kind}\r\n"
                    f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        except (OSError, ValueError, TimeoutError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def answer(
        self, method: str, path: str, headers: dict[str, str], peercert: dict[str, Any] | None
    ) -> tuple[int, Any]:
        route = path.split("?", 1)[0]
        if route in ("/healthz", "/healthz/"):
            return 200, "ok"
        if route not in ("/pods", "/pods/", "/configz"):
            return 404, "404 page not found"
        if method != "GET":
            return 405, "method not allowed"
        status, reason = await self.authorize(headers.get("authorization", ""), peercert)
        if status != 200:
            return status, reason
        if route == "/configz":
            return 200, CONFIGZ
        return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": self.pods()}

    async def authorize(self, authorization: str, peercert: dict[str, Any] | None) -> tuple[int, str]:
        """(200, "") when the caller may `get nodes/proxy` on this node; else (401|403, why)."""
        subject = _certificate_subject(peercert)
        scheme, _, token = authorization.partition(" ")
        if subject is None and (scheme.lower() != "bearer" or not token.strip()):
            return 401, "Unauthorized"
        credential = repr(subject) if subject is not None else token.strip()
        key = hashlib.sha256(credential.encode()).hexdigest()
        cached = self._decisions.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1], cached[2]
        try:
            status, reason = await self._review(subject, token.strip())
        except ReviewError as exc:  # refused, as by a kubelet whose authentication webhook fails
            log.warning("kubelet API: authentication or authorization review failed: %s", exc)
            return 401, "Unauthorized"
        self._decisions[key] = (time.monotonic() + AUTH_CACHE_S, status, reason)
        return status, reason

    async def _review(self, subject: tuple[str, list[str]] | None, token: str) -> tuple[int, str]:
        if subject is None:
            answer = await self.review(
                {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
            )
            status = answer.get("status") or {}
            if not status.get("authenticated"):
                return 401, "Unauthorized"
            user = status.get("user") or {}
            subject = (str(user.get("username", "")), [str(g) for g in user.get("groups") or []])
        user_name, groups = subject
        answer = await self.review(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": user_name,
                    "groups": groups,
                    "resourceAttributes": {
                        "verb": "get",
                        "resource": "nodes",
                        "subresource": "proxy",
                        "name": self.node_name,
                    },
                },
            }
        )
        if (answer.get("status") or {}).get("allowed"):
            return 200, ""
        return 403, (
            f"Forbidden (user={user_name}, verb=get, resource=nodes, subresource=proxy, name={self.node_name})"
        )


def _certificate_subject(peercert: dict[str, Any] | None) -> tuple[str, list[str]] | None:
    """(CN, [O...]) of a verified client certificate, as the kubelet's x509 authenticator reads it."""
    if not peercert:
        return None
    names = [pair for rdn in peercert.get("subject") or () for pair in rdn]
    common = [value for key, value in names if key == "commonName"]
    return (common[0], [value for key, value in names if key == "organizationName"]) if common else None


def server_context(cert_file: str, key_file: str, ca_file: str) -> ssl.SSLContext:
    """TLS as the kubelet serves it: its certificate, and client certificates verified against the cluster CA when
    offered (the API server's kubelet client), optional for bearer-token callers."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    context.load_verify_locations(ca_file)
    context.verify_mode = ssl.CERT_OPTIONAL
    return context


_REASONS = {200: "OK", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed"}
