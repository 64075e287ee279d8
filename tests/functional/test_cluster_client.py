"""The cluster seam against real local HTTPS servers: every failure is a named, one-line ClusterError.

Behaviour against a real kube-apiserver (pagination, metadata-only lists, RBAC) is covered in
tests/e2e; here the servers misbehave on purpose in ways a real API server rarely does on demand.
"""

from __future__ import annotations

import json
import ssl
import time
from pathlib import Path

import pytest
from local_tls import closed_port, https_server, silent_server

from outpost.cluster import Cluster, Deadline
from outpost.cluster.writer import ClusterWriter
from outpost.errors import (
    ClusterAuthError,
    ClusterResponseError,
    ClusterTimeout,
    ClusterUnreachable,
    MalformedResponse,
)
from outpost.kube.objects import NodeOutline
from outpost_sandbox.pki import LocalhostTls, localhost_tls

TOKEN = "s3cr3t-token-value"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> LocalhostTls:
    return localhost_tls(tmp_path_factory.mktemp("pki"))


def trust(pki: LocalhostTls) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.load_verify_locations(pki.ca_file)
    return context


def cluster(server: str, pki: LocalhostTls, *, deadline: float = 10.0, read: float = 5.0,
            page_size: int = 2) -> Cluster:
    return Cluster(
        "test",
        server,
        verify=trust(pki),
        token=lambda: TOKEN,
        connect_timeout=2.0,
        read_timeout=read,
        deadline=Deadline(deadline),
        page_size=page_size,
    )


def test_pagination_follows_continue_and_sends_bearer(pki: LocalhostTls) -> None:
    pages = {
        None: {"items": [{"n": 1}, {"n": 2}], "metadata": {"continue": "tok-2"}},
        "tok-2": {"items": [{"n": 3}], "metadata": {}},
    }
    auth_headers: list[str] = []

    def respond(request):  # type: ignore[no-untyped-def]
        auth_headers.append(request.headers["Authorization"])
        token = request.path.split("continue=")[1].split("&")[0] if "continue=" in request.path else None
        return 200, "application/json", json.dumps(pages[token])

    with https_server(pki, respond) as (url, seen), cluster(url, pki) as c:
        items = c.list("/api/v1/nodes", label_selector="type=kwok", metadata_only=True)
    assert [i["n"] for i in items] == [1, 2, 3]
    assert all("limit=2" in line and "labelSelector=type%3Dkwok" in line for line in seen)
    assert auth_headers == [f"Bearer {TOKEN}"] * 2


@pytest.mark.parametrize("status", [401, 403])
def test_auth_refusal_is_auth_error_without_token(pki: LocalhostTls, status: int) -> None:
    body = json.dumps({"kind": "Status", "message": 'nodes is forbidden: User "outpost-probe" cannot list'})
    with (
        https_server(pki, lambda _r: (status, "application/json", body)) as (url, _),
        cluster(url, pki) as c,
        pytest.raises(ClusterAuthError) as caught,
    ):
        c.get_json("/api/v1/nodes")
    message = str(caught.value)
    assert f"HTTP {status}" in message
    assert "outpost-probe" in message
    assert "/api/v1/nodes" in message
    assert TOKEN not in message


def test_unexpected_status_is_response_error(pki: LocalhostTls) -> None:
    with (
        https_server(pki, lambda _r: (500, "text/plain", "boom")) as (url, _),
        cluster(url, pki) as c,
        pytest.raises(ClusterResponseError, match="HTTP 500 'boom'"),
    ):
        c.get_json("/api/v1/nodes")


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("<html>not json</html>", "body is not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"kind": "NodeList"}', "no items list"),
    ],
)
def test_malformed_bodies(pki: LocalhostTls, body: str, match: str) -> None:
    with (
        https_server(pki, lambda _r: (200, "application/json", body)) as (url, _),
        cluster(url, pki) as c,
        pytest.raises(MalformedResponse, match=match),
    ):
        c.list("/api/v1/nodes")


def test_lists_validated_into_outlines_follow_continue_and_keep_only_what_they_declare(pki: LocalhostTls) -> None:
    node = {"metadata": {"name": "n1", "labels": {"type": "kwok"}, "managedFields": [{"manager": "kwok"}]},
            "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "images": [{"names": ["x"]}]}}
    pages = {None: {"items": [node, {**node, "metadata": {"name": "n2"}}], "metadata": {"continue": "tok-2"}},
             "tok-2": {"items": [{**node, "metadata": {"name": "n3"}}], "metadata": {"continue": ""}}}

    def respond(request):  # type: ignore[no-untyped-def]
        token = request.path.split("continue=")[1].split("&")[0] if "continue=" in request.path else None
        return 200, "application/json", json.dumps(pages[token])

    with https_server(pki, respond) as (url, seen), cluster(url, pki) as c:
        nodes = list(c.iter_list_as(NodeOutline, "/api/v1/nodes", label_selector="type=kwok"))
    assert [n.name for n in nodes] == ["n1", "n2", "n3"]
    assert nodes[0].spec.unschedulable
    assert nodes[0].metadata.labels == {"type": "kwok"}
    assert not hasattr(nodes[0].spec, "taints")
    assert not hasattr(nodes[0].status, "images")
    assert len(seen) == 2
    assert all("limit=2" in line and "labelSelector=type%3Dkwok" in line for line in seen)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("<html>not json</html>", "body is not JSON"),
        ('{"kind": "NodeList"}', "response has no items list"),
        ('{"items": [{"metadata": {"name": "n1"}}, {"metadata": {"name": "n7"}, "spec": {"unschedulable": "maybe"}}]}',
         r"LIST /api/v1/nodes on cluster test: node n7: field spec.unschedulable: Input should be a valid boolean"),
        ('{"items": [], "metadata": {"continue": 7}}', r"LIST /api/v1/nodes on cluster test: field metadata.continue"),
    ],
)
def test_outline_lists_that_do_not_fit_name_the_object_and_field(pki: LocalhostTls, body: str, match: str) -> None:
    with (
        https_server(pki, lambda _r: (200, "application/json", body)) as (url, _),
        cluster(url, pki) as c,
        pytest.raises(MalformedResponse, match=match),
    ):
        list(c.iter_list_as(NodeOutline, "/api/v1/nodes"))


def test_untrusted_certificate_is_unreachable_not_ignored(pki: LocalhostTls, tmp_path: Path) -> None:
    other = localhost_tls(tmp_path, "other")
    with (
        https_server(pki, lambda _r: (200, "text/plain", "ok")) as (url, _),
        cluster(url, other) as c,
        pytest.raises(ClusterUnreachable, match="TLS verification failed"),
    ):
        c.get("/livez")


def test_connection_refused(pki: LocalhostTls) -> None:
    with (
        cluster(f"https://127.0.0.1:{closed_port()}", pki) as c,
        pytest.raises(ClusterUnreachable, match="connection refused"),
    ):
        c.get("/livez")


def test_hung_server_is_bounded_by_the_shared_deadline(pki: LocalhostTls) -> None:
    with silent_server() as url, cluster(url, pki, deadline=1.5, read=30.0) as c:
        started = time.monotonic()
        with pytest.raises(ClusterTimeout, match=r"deadline of 1\.5 s ran out"):
            c.get("/livez")
        with pytest.raises(ClusterTimeout, match=r"deadline of 1\.5 s ran out"):
            c.get("/readyz")
    assert time.monotonic() - started < 5


def test_empty_token_is_refused_before_sending(pki: LocalhostTls) -> None:
    with https_server(pki, lambda _r: (200, "text/plain", "ok")) as (url, seen):
        c = Cluster("test", url, verify=trust(pki), token=lambda: "")
        with c, pytest.raises(ClusterAuthError, match="token is empty"):
            c.get("/livez")
    assert seen == []


def test_constructor_headers_go_with_every_request_and_never_replace_the_token(pki: LocalhostTls) -> None:
    received: list[tuple[str | None, str | None, str | None]] = []

    def respond(request):  # type: ignore[no-untyped-def]
        received.append((request.headers["Impersonate-User"], request.headers["Authorization"],
                         request.headers["User-Agent"]))
        return 200, "application/json", json.dumps({"items": [], "metadata": {}})

    with https_server(pki, respond) as (url, _seen), Cluster(
            "test", url, verify=trust(pki), token=lambda: TOKEN, deadline=Deadline(10),
            headers={"Impersonate-User": "apf-load"}) as c:
        c.get("/readyz")
        c.list("/api/v1/pods")
    assert [user for user, _auth, _agent in received] == ["apf-load", "apf-load"]
    assert all(auth == f"Bearer {TOKEN}" and agent and agent.startswith("outpost/")
               for _user, auth, agent in received)


def test_writer_delete_sends_its_parameters_and_treats_404_as_gone(pki: LocalhostTls) -> None:
    def respond(request):  # type: ignore[no-untyped-def]
        if request.path.startswith("/api/v1/namespaces/ns/pods/gone"):
            return 404, "application/json", json.dumps({"kind": "Status", "code": 404})
        return 200, "application/json", json.dumps({"kind": "Pod", "metadata": {"name": "p"}})

    with https_server(pki, respond) as (url, seen), ClusterWriter(
            "test", url, verify=trust(pki), token=lambda: TOKEN, deadline=Deadline(10)) as writer:
        deleted = writer.delete("/api/v1/namespaces/ns/pods/p", {"gracePeriodSeconds": "0"})
        missing = writer.delete("/api/v1/namespaces/ns/pods/gone")
    assert deleted == {"kind": "Pod", "metadata": {"name": "p"}}
    assert missing is None
    assert seen == ["DELETE /api/v1/namespaces/ns/pods/p?gracePeriodSeconds=0",
                    "DELETE /api/v1/namespaces/ns/pods/gone"]
