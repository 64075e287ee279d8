"""The process node's kubelet API: who may read its pods, as a kubelet with webhook authentication and
authorization decides (TokenReview, then SubjectAccessReview for `get nodes/proxy` on the node).

The reviews are answered here as the API server answers them; the real API server answers them in
tests/e2e/test_sandbox_systems.py, where the real koordlet reads its pods from this API.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from outpost_sandbox.kubelet import api

POD = {"metadata": {"name": "koordlet-x", "namespace": "koordinator-system"}}
KOORDLET = "system:serviceaccount:koordinator-system:koordlet"


def reviewer(authenticated: bool, allowed: bool, calls: list[dict[str, Any]]) -> api.Review:
    async def review(body: dict[str, Any]) -> dict[str, Any]:
        calls.append(body)
        if body["kind"] == "TokenReview":
            if body["spec"]["token"] == "broken":
                raise api.ReviewError("TokenReview: 503")
            user = {"username": KOORDLET, "groups": ["system:serviceaccounts"]}
            return {"status": {"authenticated": authenticated, "user": user if authenticated else {}}}
        return {"status": {"allowed": allowed}}

    return review


def answer(
    path: str,
    authorization: str = "Bearer t0ken",
    authenticated: bool = True,
    allowed: bool = True,
    peercert: dict[str, Any] | None = None,
) -> tuple[int, Any, list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []
    server = api.KubeletApi("outpost-sandbox-node", lambda: [POD], reviewer(authenticated, allowed, calls))
    headers = {"authorization": authorization} if authorization else {}
    status, body = asyncio.run(server.answer("GET", path, headers, peercert))
    return status, body, calls


@pytest.mark.parametrize(
    ("path", "authorization", "authenticated", "allowed", "status"),
    [
        ("/pods/", "Bearer t0ken", True, True, 200),
        ("/pods", "Bearer t0ken", True, True, 200),
        ("/configz", "Bearer t0ken", True, True, 200),
        ("/pods/", "", True, True, 401),  # no credential
        ("/pods/", "Basic dTpw", True, True, 401),  # not a bearer token
        ("/pods/", "Bearer t0ken", False, True, 401),  # the API server does not know the token
        ("/pods/", "Bearer t0ken", True, False, 403),  # known, but not allowed nodes/proxy
        ("/pods/", "Bearer broken", True, True, 401),  # the review itself failed: refused, never let through
        ("/exec/ns/pod/c", "Bearer t0ken", True, True, 404),
        ("/healthz", "", True, True, 200),  # unauthenticated, as the kubelet's
    ],
)
def test_only_a_caller_allowed_nodes_proxy_reads_the_node(
    path: str, authorization: str, authenticated: bool, allowed: bool, status: int
) -> None:
    got, body, _calls = answer(path, authorization, authenticated, allowed)
    assert got == status
    if got == 200 and path.startswith("/pods"):
        assert body == {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [POD]}
    if got == 200 and path == "/configz":
        assert body["kubeletconfig"]["cgroupDriver"] == "cgroupfs"  # what koordlet's cgroup paths follow


def test_the_subject_access_review_asks_for_get_nodes_proxy_on_this_node() -> None:
    _status, _body, calls = answer("/pods/")
    assert [c["kind"] for c in calls] == ["TokenReview", "SubjectAccessReview"]
    spec = calls[1]["spec"]
    assert (spec["user"], spec["groups"]) == (KOORDLET, ["system:serviceaccounts"])
    assert spec["resourceAttributes"] == {
        "verb": "get",
        "resource": "nodes",
        "subresource": "proxy",
        "name": "outpost-sandbox-node",
    }


def test_a_refusal_names_the_user_and_never_the_token() -> None:
    _status, body, _calls = answer("/pods/", "Bearer s3cret-token", allowed=False)
    assert KOORDLET in body
    assert "s3cret-token" not in body


def test_a_verified_client_certificate_is_authorized_by_its_subject_without_a_token_review() -> None:
    cert = {"subject": ((("organizationName", "system:masters"),), (("commonName", "kube-apiserver-kubelet-client"),))}
    status, _body, calls = answer("/pods/", authorization="", peercert=cert)
    assert status == 200
    assert [c["kind"] for c in calls] == ["SubjectAccessReview"]
    assert (calls[0]["spec"]["user"], calls[0]["spec"]["groups"]) == (
        "kube-apiserver-kubelet-client",
        ["system:masters"],
    )


def test_decisions_are_cached_as_the_kubelet_caches_them() -> None:
    calls: list[dict[str, Any]] = []
    server = api.KubeletApi("outpost-sandbox-node", lambda: [POD], reviewer(True, True, calls))

    async def twice() -> list[int]:
        return [(await server.answer("GET", "/pods/", {"authorization": "Bearer t0ken"}, None))[0] for _ in range(2)]

    assert asyncio.run(twice()) == [200, 200]
    assert len(calls) == 2  # one TokenReview and one SubjectAccessReview for both requests
