"""`outpost.cluster.plain.get_url` and ls-latency's plain-URL endpoints against a real local HTTP server:
no cluster credential ever reaches the URL, redirects are not followed, time and size are bounded."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator

import httpx
import pytest
from local_server import LocalServer

from kit import NOW
from outpost.bounded import Deadline
from outpost.checks import ls_latency
from outpost.checks.ls_latency import LsEndpoint, LsLatencyParams
from outpost.cluster import Cluster, get_url
from outpost.errors import ClusterTimeout, ClusterUnreachable, ResponseTooLarge
from outpost.result import Status

CLUSTER_TOKEN = "cluster-bearer-token-never-sent-to-a-plain-url"


@pytest.fixture
def server() -> Iterator[LocalServer]:
    running = LocalServer(script=[(200, {"Content-Type": "text/plain"}, b"ok\n")])
    running.start()
    yield running
    running.stop()


def test_answer_is_returned_without_any_credential(server: LocalServer) -> None:
    response = get_url(server.base_url + "/health?x=1", deadline=Deadline(5), timeout=2)
    assert (response.status_code, response.text) == (200, "ok\n")
    assert response.path == server.base_url + "/health"  # no query string in what messages show
    (request,) = server.requests
    assert request.headers.get("Authorization") is None
    assert request.headers.get("Cookie") is None


def test_status_is_the_observation_and_redirects_are_not_followed(server: LocalServer) -> None:
    server.script = [(302, {"Location": "http://127.0.0.1:1/elsewhere"}, b"")]
    response = get_url(server.base_url + "/", deadline=Deadline(5), timeout=2)
    assert response.status_code == 302
    assert len(server.requests) == 1


def test_hang_ends_at_the_timeout(server: LocalServer) -> None:
    server.script = ["hang"]
    started = time.monotonic()
    with pytest.raises(ClusterTimeout, match=r"no answer within 0\.5 s"):
        get_url(server.base_url + "/", deadline=Deadline(5), timeout=0.5)
    assert time.monotonic() - started < 2


def test_body_over_the_cap_is_refused(server: LocalServer) -> None:
    server.script = [(200, {}, b"x" * 5000)]
    with pytest.raises(ResponseTooLarge):
        get_url(server.base_url + "/", deadline=Deadline(5), timeout=2, max_response_bytes=1024)


def test_refused_connection_is_unreachable(server: LocalServer) -> None:
    url = server.base_url + "/"
    server.stop()
    with pytest.raises(ClusterUnreachable, match=r"GET http://127\.0\.0\.1"):
        get_url(url, deadline=Deadline(5), timeout=1)


def test_ls_latency_plain_url_never_carries_the_cluster_token(server: LocalServer) -> None:
    """The check runs with a Cluster holding a token; the plain URL must not see it."""
    api_calls: list[httpx.Request] = []

    def api(request: httpx.Request) -> httpx.Response:
        api_calls.append(request)
        return httpx.Response(200, json={"major": "1"})

    params = LsLatencyParams(endpoints=[LsEndpoint(name="shop", url=server.base_url + "/health")])
    cluster = Cluster(
        "c",
        "https://api.invalid",
        verify=ssl.create_default_context(),
        token=lambda: CLUSTER_TOKEN,
        transport=httpx.MockTransport(api),
        deadline=Deadline(5),
    )
    with cluster:
        result = ls_latency.evaluate(ls_latency.fetch(cluster, params), params, NOW)
    assert result.status is Status.OK, result
    (request,) = server.requests
    assert CLUSTER_TOKEN not in str(request.headers.items())
    assert api_calls == []  # nothing went to the API server either


def test_ls_latency_plain_url_slow_and_down(server: LocalServer) -> None:
    server.script = ["hang"]
    endpoint = LsEndpoint(name="shop", url=server.base_url + "/health", degraded_ms=100, failed_ms=300)
    params = LsLatencyParams(endpoints=[endpoint])
    with Cluster(
        "c",
        "https://api.invalid",
        verify=ssl.create_default_context(),
        transport=httpx.MockTransport(lambda r: httpx.Response(500)),
        deadline=Deadline(5),
    ) as cluster:
        result = ls_latency.evaluate(ls_latency.fetch(cluster, params), params, NOW)
    assert result.status is Status.FAILED
    assert f"ls endpoint shop ({server.base_url}/health): observed no answer within 300 ms" in result.errors[0]
