"""The cluster seam against real local HTTPS servers: every failure is a named, one-line ClusterError.

Behaviour against a real kube-apiserver (pagination, metadata-only lists, RBAC) is covered in
tests/e2e; here the servers misbehave on purpose in ways a real API server rarely does on demand.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile import EndlessList, HostileServer, big_gzip_bomb, deep_json, healthy, reply
from local_tls import closed_port, https_server, silent_server

from outpost.cluster import Cluster, Deadline, client
from outpost.cluster.writer import ClusterWriter
from outpost.errors import (
    ClusterAuthError,
    ClusterRequestRefused,
    ClusterResponseError,
    ClusterTimeout,
    ClusterUnreachable,
    MalformedResponse,
    ResponseTooLarge,
)
from outpost.kube.objects import NodeOutline
from outpost_sandbox.pki import LocalhostTls, localhost_tls

TOKEN = "s3cr3t-token-value"


def trust(pki: LocalhostTls) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.load_verify_locations(pki.ca_file)
    return context


def cluster(
    server: str, pki: LocalhostTls, *, deadline: float = 10.0, read: float = 5.0, page_size: int = 2
) -> Cluster:
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
    node = {
        "metadata": {"name": "n1", "labels": {"type": "kwok"}, "managedFields": [{"manager": "kwok"}]},
        "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "images": [{"names": ["x"]}]},
    }
    pages = {
        None: {"items": [node, {**node, "metadata": {"name": "n2"}}], "metadata": {"continue": "tok-2"}},
        "tok-2": {"items": [{**node, "metadata": {"name": "n3"}}], "metadata": {"continue": ""}},
    }

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
        (
            '{"items": [{"metadata": {"name": "n1"}}, '
            '{"metadata": {"name": "n7"}, "spec": {"unschedulable": "maybe"}}]}',
            r"LIST /api/v1/nodes on cluster test: node n7: field spec.unschedulable: Input should be a valid boolean",
        ),
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
        received.append(
            (request.headers["Impersonate-User"], request.headers["Authorization"], request.headers["User-Agent"])
        )
        return 200, "application/json", json.dumps({"items": [], "metadata": {}})

    with (
        https_server(pki, respond) as (url, _seen),
        Cluster(
            "test",
            url,
            verify=trust(pki),
            token=lambda: TOKEN,
            deadline=Deadline(10),
            headers={"Impersonate-User": "apf-load"},
        ) as c,
    ):
        c.get("/readyz")
        c.list("/api/v1/pods")
    assert [user for user, _auth, _agent in received] == ["apf-load", "apf-load"]
    assert all(auth == f"Bearer {TOKEN}" and agent and agent.startswith("outpost/") for _user, auth, agent in received)


def test_writer_delete_sends_its_parameters_and_treats_404_as_gone(pki: LocalhostTls) -> None:
    def respond(request):  # type: ignore[no-untyped-def]
        if request.path.startswith("/api/v1/namespaces/ns/pods/gone"):
            return 404, "application/json", json.dumps({"kind": "Status", "code": 404})
        return 200, "application/json", json.dumps({"kind": "Pod", "metadata": {"name": "p"}})

    with (
        https_server(pki, respond) as (url, seen),
        ClusterWriter("test", url, verify=trust(pki), token=lambda: TOKEN, deadline=Deadline(10)) as writer,
    ):
        deleted = writer.delete("/api/v1/namespaces/ns/pods/p", {"gracePeriodSeconds": "0"})
        missing = writer.delete("/api/v1/namespaces/ns/pods/gone")
    assert deleted == {"kind": "Pod", "metadata": {"name": "p"}}
    assert missing is None
    assert seen == [
        "DELETE /api/v1/namespaces/ns/pods/p?gracePeriodSeconds=0",
        "DELETE /api/v1/namespaces/ns/pods/gone",
    ]


# -- issue 20: one byte budget per run, counted as bytes arrive; strict encodings; our own request --------------


def hostile_cluster(server: HostileServer, pki: LocalhostTls, **options: Any) -> Cluster:
    return Cluster(
        "test",
        server.url,
        verify=trust(pki),
        token=options.pop("token", lambda: TOKEN),
        connect_timeout=2.0,
        read_timeout=5.0,
        deadline=Deadline(options.pop("deadline", 10.0)),
        page_size=2,
        **options,
    )


def test_a_gzip_answer_is_decoded_by_outpost_and_asked_for_as_go_asks(pki: LocalhostTls) -> None:
    body = json.dumps({"kind": "Status", "message": "fine"}).encode()
    # two concatenated gzip members read as one body, as Go's gzip.Reader does (multistream)
    served = reply(
        200,
        gzip.compress(body[:10]) + gzip.compress(body[10:]),
        {"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    with HostileServer(served, pki.cert_file, pki.key_file) as server, hostile_cluster(server, pki) as c:
        assert c.get_json("/version") == {"kind": "Status", "message": "fine"}
        assert c.budget.used == len(body)  # counted decoded
    assert server.requests[0].headers["accept-encoding"] == "gzip"


@pytest.mark.parametrize(
    ("encoding", "match"),
    [
        ("gzip, gzip", r"GET /livez on cluster test: stacked content codings 'gzip, gzip' refused"),
        ("gzip,identity,gzip", r"stacked content codings 'gzip, gzip' refused"),
        ("deflate", r"content coding 'deflate' refused \(identity or gzip only"),
        ("br", r"content coding 'br' refused"),
        ("x-gzip", r"content coding 'x-gzip' refused"),
    ],
)
def test_stacked_or_other_content_codings_are_refused_by_name(pki: LocalhostTls, encoding: str, match: str) -> None:
    served = reply(200, gzip.compress(gzip.compress(b"[+]ping ok\n")), {"Content-Encoding": encoding})
    with (
        HostileServer(served, pki.cert_file, pki.key_file) as server,
        hostile_cluster(server, pki) as c,
        pytest.raises(MalformedResponse, match=match),
    ):
        c.get("/livez")


def test_a_gzip_bomb_is_refused_before_it_inflates_past_the_cap(pki: LocalhostTls) -> None:
    # 256 MiB of zeros in about 256 KB: refused at the cap (1 MiB) having inflated no more than that.
    with (
        HostileServer(big_gzip_bomb(256 * 1024 * 1024), pki.cert_file, pki.key_file) as server,
        hostile_cluster(server, pki, max_response_bytes=1024 * 1024) as c,
        pytest.raises(
            ResponseTooLarge,
            match=r"GET /livez .*exceeds the cap of 1048576 bytes "
            r"\(cluster.max_response_bytes\) once inflated",
        ),
    ):
        c.get("/livez")


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (gzip.compress(b"[+]ping ok\n" * 100)[:-12], "gzip body ends before its stream does"),
        (b"\x1f\x8b\x08\x00garbage-not-deflate", "gzip body is corrupt"),
    ],
)
def test_a_broken_gzip_body_is_malformed(pki: LocalhostTls, body: bytes, match: str) -> None:
    with (
        HostileServer(reply(200, body, {"Content-Encoding": "gzip"}), pki.cert_file, pki.key_file) as server,
        hostile_cluster(server, pki) as c,
        pytest.raises(MalformedResponse, match=match),
    ):
        c.get("/livez")


def test_the_run_budget_spans_every_request_of_the_cluster(pki: LocalhostTls) -> None:
    chunk = "x" * (600 * 1024)
    with (
        HostileServer(reply(200, chunk), pki.cert_file, pki.key_file) as server,
        hostile_cluster(server, pki, max_run_bytes=1024 * 1024) as c,
    ):
        c.get("/a")  # 600 KiB of the run's 1 MiB
        with pytest.raises(
            ResponseTooLarge,
            match=r"GET /b on cluster test: the run has read more than its "
            r"budget of 1048576 bytes \(cluster.max_run_bytes\)",
        ):
            c.get("/b")


def test_the_run_budget_spans_every_page_of_a_list(pki: LocalhostTls) -> None:
    pages = EndlessList(padding=50_000)
    with (
        HostileServer(pages, pki.cert_file, pki.key_file) as server,
        hostile_cluster(server, pki, max_run_bytes=1024 * 1024) as c,
        pytest.raises(ResponseTooLarge, match=r"LIST|budget of 1048576 bytes \(cluster.max_run_bytes\)"),
    ):
        list(c.iter_list_as(NodeOutline, "/api/v1/nodes"))
    assert pages.sent < 1024 * 1024 + 2 * 51_000


@pytest.mark.parametrize("validated", [False, True])
def test_a_list_is_bounded_in_pages_and_refuses_a_repeated_token(
    pki: LocalhostTls, validated: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read(c: Cluster) -> None:
        list(c.iter_list_as(NodeOutline, "/api/v1/nodes") if validated else c.iter_list("/api/v1/nodes"))

    with (
        HostileServer(EndlessList(padding=10, same_token=True), pki.cert_file, pki.key_file) as server,
        hostile_cluster(server, pki) as c,
        pytest.raises(
            MalformedResponse,
            match=r"LIST /api/v1/nodes on cluster test: page 2 hands back the "
            r"continue token it was asked with",
        ),
    ):
        read(c)
    monkeypatch.setattr(client, "MAX_LIST_PAGES", 5)
    pages = EndlessList(padding=10)
    with (
        HostileServer(pages, pki.cert_file, pki.key_file) as server,
        hostile_cluster(server, pki) as c,
        pytest.raises(ResponseTooLarge, match=r"LIST /api/v1/nodes on cluster test: more than 5 pages of 2"),
    ):
        read(c)
    assert pages.pages == 5


READS: dict[str, Callable[[Cluster], object]] = {
    "get_json": lambda c: c.get_json("/api/v1/nodes"),
    "list": lambda c: c.list("/api/v1/nodes"),
    "iter_list_as": lambda c: list(c.iter_list_as(NodeOutline, "/api/v1/nodes")),
}


@pytest.mark.parametrize("how", list(READS))
def test_json_nested_deeper_than_the_parser_goes_is_malformed_not_a_crash(pki: LocalhostTls, how: str) -> None:
    with (
        HostileServer(deep_json(100_000), pki.cert_file, pki.key_file) as server,
        hostile_cluster(server, pki) as c,
        pytest.raises(
            MalformedResponse,
            match=r"/api/v1/nodes.*JSON nested deeper than \d+ levels, the parser's "
            r"limit \(Go's encoding/json stops at 10000\)",
        ),
    ):
        READS[how](c)


def test_a_deeply_nested_refusal_is_still_the_refusal(pki: LocalhostTls) -> None:
    with (
        HostileServer(deep_json(100_000, status=403, wrap="none"), pki.cert_file, pki.key_file) as server,
        hostile_cluster(server, pki) as c,
        pytest.raises(ClusterAuthError, match=r"GET /livez .*HTTP 403"),
    ):
        c.get("/livez")


@pytest.mark.parametrize(
    ("token", "match"),
    [
        ("t" * (64 * 1024 + 1), r"the bearer token is 65537 bytes, more than the 65536 bytes Outpost sends"),
        ("tok\u00e9n-value", r"characters an HTTP header cannot carry"),
        ("tok\ten-value", r"characters an HTTP header cannot carry"),
    ],
)
def test_a_token_no_header_should_carry_is_refused_before_anything_is_sent(
    pki: LocalhostTls, token: str, match: str
) -> None:
    with (
        HostileServer(healthy(), pki.cert_file, pki.key_file, max_header_bytes=1 << 20) as server,
        hostile_cluster(server, pki, token=lambda: token) as c,
    ):
        with pytest.raises(ClusterAuthError, match=match) as caught:
            c.get("/livez")
        assert token not in str(caught.value)
        assert (server.requests, server.refused_large_headers) == ([], 0)
    ok = "t" * (64 * 1024)  # the largest token sent: under Go's (and kube-apiserver's) 1 MiB header limit
    with (
        HostileServer(healthy(), pki.cert_file, pki.key_file, max_header_bytes=1 << 20) as server,
        hostile_cluster(server, pki, token=lambda: ok) as c,
    ):
        assert c.get("/livez").status_code == 200


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (411, "Length Required"),
        (413, "Content Too Large"),
        (414, "URI Too Long"),
        (415, "Unsupported Media Type"),
        (431, "Request Header Fields Too Large"),
    ],
)
def test_a_refusal_of_our_own_request_is_an_error_from_every_verb(pki: LocalhostTls, status: int, reason: str) -> None:
    with (
        https_server(pki, lambda _r: (status, "text/plain", "nope")) as (url, _seen),
        ClusterWriter("test", url, verify=trust(pki), token=lambda: TOKEN, deadline=Deadline(10)) as c,
    ):
        for call in (
            lambda: c.get("/livez"),
            lambda: c.dry_run_create("/api/v1/namespaces/p/pods", {}),
            lambda: c.create("/api/v1/namespaces/p/pods", {}),
        ):
            with pytest.raises(
                ClusterRequestRefused,
                match=rf"HTTP {status} {reason}: our own request was refused, "
                "nothing observed 'nope'",
            ) as caught:
                call()
            assert caught.value.status_code == status


def test_a_400_is_still_the_callers_to_judge(pki: LocalhostTls) -> None:
    denial = json.dumps(
        {"kind": "Status", "code": 400, "message": 'admission webhook "vpod.koordinator.sh" denied the request: no'}
    )
    with (
        https_server(pki, lambda _r: (400, "application/json", denial)) as (url, _seen),
        Cluster("test", url, verify=trust(pki), token=lambda: TOKEN, deadline=Deadline(10)) as c,
    ):
        assert c.get("/api/v1/namespaces/ns/pods/p:8000/proxy/readyz").status_code == 400
        assert c.dry_run_create("/api/v1/namespaces/p/pods", {}).status_code == 400


# A fatal TLS alert record, decode_error (RFC 8446 6.2): what a busy Go server sent once in the fault catalogue.
DECODE_ERROR_ALERT = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32])


@contextlib.contextmanager
def handshake_failing_front(upstream: str, failures: int) -> Iterator[tuple[str, list[int]]]:
    """A TCP front for `upstream` that answers the first `failures` connections' ClientHello with a fatal TLS alert,
    and pipes the others through; yields its URL and the number of connections it accepted."""
    host, port = upstream.removeprefix("https://").split(":")
    listener = socket.create_server(("127.0.0.1", 0))
    accepted = [0]

    def pipe(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                target.sendall(chunk)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                accepted[0] += 1
                if accepted[0] <= failures:
                    conn.recv(65536)
                    conn.sendall(DECODE_ERROR_ALERT)
                    conn.close()
                    continue
                back = socket.create_connection((host, int(port)))
                for a, b in ((conn, back), (back, conn)):
                    threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        listener.close()


def test_one_failed_handshake_is_tried_once_more(pki: LocalhostTls) -> None:
    with (
        https_server(pki, lambda _r: (200, "text/plain", "ok")) as (url, _),
        handshake_failing_front(url, failures=1) as (front, accepted),
        cluster(front, pki) as c,
    ):
        assert c.get("/livez").status_code == 200
    assert accepted == [2]


def test_a_handshake_that_keeps_failing_is_unreachable_after_one_more_try(pki: LocalhostTls) -> None:
    with (
        https_server(pki, lambda _r: (200, "text/plain", "ok")) as (url, _),
        handshake_failing_front(url, failures=10) as (front, accepted),
        cluster(front, pki) as c,
        pytest.raises(ClusterUnreachable, match=r"cannot connect .*DECODE_ERROR"),
    ):
        c.get("/livez")
    assert accepted == [client.CONNECT_ATTEMPTS]


def test_a_refused_connection_is_not_tried_again(pki: LocalhostTls) -> None:
    started = time.monotonic()
    with cluster(f"https://127.0.0.1:{closed_port()}", pki) as c, pytest.raises(ClusterUnreachable, match="refused"):
        c.get("/livez")
    assert c.requests == 0
    assert time.monotonic() - started < 2
