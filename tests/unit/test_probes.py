"""outpost.cluster.probes: proxied health answers classified the Outpost way, over the kit's fake API server.

The bodies are the ones the sandbox backends and the API server's proxy send (controller-runtime's `ok` and
`[-]NAME failed: reason withheld`, a webhook's empty 200, the API server's `Status` for a backend it cannot
reach); the transport failures are the kit's (read timeout, connection refused) under the real `Cluster`.
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from kit import FakeApiServer, fake_cluster
from outpost.cluster import Deadline, ProbeTarget, Verdict, pod_proxy, probe_all
from outpost.cluster.probes import CONTROL_PATH, api_server_answers, classify, raise_if_unobserved
from outpost.errors import ClusterError

NS = "kruise-system"
REACH_FAILED = json.dumps(
    {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "error trying to reach service: read tcp 10.244.0.1:41234->10.244.0.7:8000: read: connection reset "
        "by "
        "peer",
        "reason": "ServiceUnavailable",
        "code": 503,
    }
)


@pytest.mark.parametrize(
    ("status", "body", "expect", "verdict", "detail_has"),
    [
        (200, "ok", "ok", Verdict.HEALTHY, "HTTP 200"),
        (200, "ok\n", "ok", Verdict.HEALTHY, "HTTP 200"),  # surrounding whitespace is not a different body
        (200, "", None, Verdict.HEALTHY, "HTTP 200"),  # a webhook's /healthz: 200 with an empty body
        (204, "", None, Verdict.HEALTHY, "HTTP 204"),
        (200, "[-]not-this-body\n", "ok", Verdict.UNHEALTHY, "with body '[-]not-this-body' (want 'ok')"),
        (200, "[-]not-this-body\n", None, Verdict.HEALTHY, "HTTP 200"),  # status code only, as asked
        (200, "", "ok", Verdict.UNHEALTHY, "with body '' (want 'ok')"),
        (
            500,
            "[-]ping failed: reason withheld\nhealthz check failed\n",
            "ok",
            Verdict.UNHEALTHY,
            "HTTP 500 '[-]ping failed: reason withheld healthz check failed' (want 200)",
        ),
        (503, REACH_FAILED, "ok", Verdict.UNHEALTHY, "HTTP 503 (error trying to reach service: read tcp"),
        (502, "", None, Verdict.UNHEALTHY, "HTTP 502 with an empty body (want 200)"),
        (404, "404 page not found\n", "ok", Verdict.UNHEALTHY, "HTTP 404 '404 page not found'"),
        (
            404,
            json.dumps({"kind": "Status", "message": 'pods "gone" not found', "code": 404}),
            None,
            Verdict.UNHEALTHY,
            'HTTP 404 (pods "gone" not found)',
        ),
        (400, "bad request", None, Verdict.UNHEALTHY, "HTTP 400"),
        (401, "", None, Verdict.UNOBSERVED, "identity was refused"),
        (403, "forbidden", None, Verdict.UNOBSERVED, "identity was refused"),
        (429, "too many requests", "ok", Verdict.UNOBSERVED, "rate limited"),
        (301, "", "ok", Verdict.UNOBSERVED, "redirect (not followed)"),
        (307, "", None, Verdict.UNOBSERVED, "redirect (not followed)"),
        (101, "", None, Verdict.UNOBSERVED, "not a final answer"),
        (200, "{not json", None, Verdict.HEALTHY, "HTTP 200"),
        (500, "{not json", None, Verdict.UNHEALTHY, "HTTP 500 '{not json'"),
    ],
)
def test_classify(status: int, body: str, expect: str | None, verdict: Verdict, detail_has: str) -> None:
    got, detail = classify(status, body, expect)
    assert got is verdict
    assert detail_has in detail
    assert "\n" not in detail


def test_a_long_body_is_previewed_on_one_line() -> None:
    _, detail = classify(500, "x\n" * 500, None)
    assert len(detail) < 200
    assert "…" in detail


def target(pod: str, endpoint: str = "healthz", expect: str | None = "ok") -> ProbeTarget:
    return ProbeTarget(f"pod {NS}/{pod}", f":8000/{endpoint}", pod_proxy(NS, pod, 8000, endpoint), expect)


def test_outcomes_in_order_with_messages_naming_the_object() -> None:
    api = (
        FakeApiServer()
        .respond(pod_proxy(NS, "m-a", 8000, "healthz"), 200, "ok")
        .respond(pod_proxy(NS, "m-b", 8000, "healthz"), 500, "[-]ping failed: reason withheld\n")
        .respond(pod_proxy(NS, "m-c", 8000, "healthz"), 200, "[-]not-this-body\n")
    )
    with fake_cluster(api) as cluster:
        outcomes = probe_all(cluster, [target("m-a"), target("m-b"), target("m-c")], timeout=2)
    assert [o.verdict for o in outcomes] == [Verdict.HEALTHY, Verdict.UNHEALTHY, Verdict.UNHEALTHY]
    assert outcomes[0].healthy
    assert (outcomes[0].status_code, outcomes[0].body) == (200, "ok")
    assert outcomes[1].message == (
        "pod kruise-system/m-b :8000/healthz: HTTP 500 '[-]ping failed: reason withheld' (want 200)"
    )
    assert outcomes[2].message.startswith("pod kruise-system/m-c :8000/healthz: HTTP 200 with body")
    assert outcomes[1].as_detail() == {
        "target": "pod kruise-system/m-b",
        "endpoint": ":8000/healthz",
        "verdict": "unhealthy",
        "status_code": 500,
        "detail": "HTTP 500 '[-]ping failed: reason withheld' (want 200)",
        "elapsed_ms": outcomes[1].elapsed_ms,
    }
    # the proxy was asked for any content type: a health endpoint answers text, not JSON
    assert {r.accept for r in api.requests} == {"*/*"}
    assert CONTROL_PATH not in [r.path for r in api.requests]  # no timeout, no control request


def test_a_hanging_target_is_unhealthy_when_the_api_server_answers() -> None:
    api = (
        FakeApiServer()
        .respond(pod_proxy(NS, "m-a", 8000, "healthz"), 200, "ok")
        .hang(pod_proxy(NS, "m-b", 8000, "healthz"))
        .unreachable(pod_proxy(NS, "m-c", 8000, "healthz"))
        .respond(CONTROL_PATH, 200, json.dumps({"major": "1", "minor": "33"}), "application/json")
    )
    with fake_cluster(api) as cluster:
        outcomes = probe_all(cluster, [target("m-a"), target("m-b"), target("m-c")], timeout=1.5)
    assert [o.verdict for o in outcomes] == [Verdict.HEALTHY, Verdict.UNHEALTHY, Verdict.UNHEALTHY]
    assert outcomes[1].message == (
        "pod kruise-system/m-b :8000/healthz: no answer within 1.5 s through the API server proxy"
    )
    assert outcomes[2].detail.startswith("connection failed (")
    assert [r.path for r in api.requests].count(CONTROL_PATH) == 1  # asked once, whatever the number of timeouts


@pytest.mark.parametrize("control", ["hang", "unreachable"])
def test_a_timeout_while_the_api_server_is_silent_is_not_observed(control: str) -> None:
    api = (
        FakeApiServer()
        .respond(pod_proxy(NS, "m-a", 8000, "healthz"), 200, "ok")
        .hang(pod_proxy(NS, "m-b", 8000, "healthz"))
    )
    getattr(api, control)(CONTROL_PATH)
    with fake_cluster(api) as cluster:
        with pytest.raises(
            ClusterError,
            match=r"pod kruise-system/m-b :8000/healthz: no answer within 1 s, and the "
            r"API server itself does not answer",
        ):
            probe_all(cluster, [target("m-a"), target("m-b")], timeout=1)
        outcomes = probe_all(cluster, [target("m-a"), target("m-b")], timeout=1, raise_unobserved=False)
    assert [o.verdict for o in outcomes] == [Verdict.HEALTHY, Verdict.UNOBSERVED]


@pytest.mark.parametrize(
    ("status", "match"),
    [
        (403, r"HTTP 403"),
        (401, r"HTTP 401"),
        (429, r"rate limited"),
        (302, r"redirect"),
        (431, r"HTTP 431 Request Header Fields Too Large: our own request was refused"),
        (413, r"HTTP 413 Content Too Large: our own request was refused"),
        (414, r"HTTP 414 URI Too Long: our own request was refused"),
    ],
)
def test_refused_limited_or_redirected_is_not_observed(status: int, match: str) -> None:
    api = (
        FakeApiServer()
        .respond(pod_proxy(NS, "m-a", 8000, "readyz"), status, "")
        .respond(pod_proxy(NS, "m-b", 8000, "readyz"), status, "")
    )
    unobserved = rf"^pod kruise-system/m-a :8000/readyz: .*{match}.* \(and 1 more endpoint\(s\) not observed\)$"
    with fake_cluster(api) as cluster, pytest.raises(ClusterError, match=unobserved):
        probe_all(cluster, [target("m-a", "readyz"), target("m-b", "readyz")], timeout=2)


def test_a_spent_deadline_is_not_observed() -> None:
    api = FakeApiServer().respond(pod_proxy(NS, "m-a", 8000, "readyz"), 200, "ok")
    deadline = Deadline(0.0)
    with fake_cluster(api, deadline=deadline) as cluster:
        outcomes = probe_all(cluster, [target("m-a", "readyz")], timeout=2, raise_unobserved=False)
    assert outcomes[0].verdict is Verdict.UNOBSERVED
    assert "deadline" in outcomes[0].detail
    assert api.requests == []  # nothing was sent once the budget was gone


def test_no_target_no_request() -> None:
    api = FakeApiServer()
    with fake_cluster(api) as cluster:
        assert probe_all(cluster, [], timeout=1) == []
    assert api.requests == []


class _CountingApi(FakeApiServer):
    """Records the most requests it served at once (each takes a little while)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self.in_flight = 0
        self.most = 0

    def handler(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            time.sleep(0.05)
            return super().handler(request)
        finally:
            with self._lock:
                self.in_flight -= 1


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_is_bounded_and_nothing_outlives_the_call(concurrency: int) -> None:
    api = _CountingApi()
    targets = [target(f"m-{i}") for i in range(9)]
    for t in targets:
        api.respond(t.path, 200, "ok")
    threads_before = threading.active_count()
    with fake_cluster(api) as cluster:
        outcomes = probe_all(cluster, targets, timeout=2, concurrency=concurrency)
    assert [o.target for o in outcomes] == targets
    assert all(o.healthy for o in outcomes)
    assert api.most == concurrency
    assert threading.active_count() == threads_before


def test_api_server_answers_counts_a_refusal_as_an_answer() -> None:
    with fake_cluster(FakeApiServer().respond(CONTROL_PATH, 403, "forbidden")) as cluster:
        assert api_server_answers(cluster) is None
    with fake_cluster(FakeApiServer().unreachable(CONTROL_PATH)) as cluster:
        assert "connection refused" in (api_server_answers(cluster) or "")


def test_raise_if_unobserved_passes_observed_outcomes() -> None:
    api = FakeApiServer().respond(pod_proxy(NS, "m-a", 8000, "readyz"), 500, "")
    with fake_cluster(api) as cluster:
        outcomes = probe_all(cluster, [target("m-a", "readyz")], timeout=2, raise_unobserved=False)
    raise_if_unobserved(outcomes)  # unhealthy is an observation, not a failure to observe
    assert outcomes[0].verdict is Verdict.UNHEALTHY


@pytest.mark.parametrize("status", [411, 413, 414, 415, 431])
def test_classify_reads_a_refusal_of_our_own_request_as_not_observed(status: int) -> None:
    verdict, detail = classify(status, "refused", "ok")
    assert verdict is Verdict.UNOBSERVED
    assert "our own request was refused" in detail


def test_a_million_line_answer_is_classified_from_its_head_only() -> None:
    body = "[+]check ok\n" * 1_000_000
    started = time.monotonic()
    verdict, detail = classify(200, body, "ok")
    failed, failed_detail = classify(500, body, None)
    assert time.monotonic() - started < 0.5
    assert (verdict, failed) == (Verdict.UNHEALTHY, Verdict.UNHEALTHY)
    assert len(detail) < 250
    assert len(failed_detail) < 250
    assert "…" in failed_detail


def test_a_deeply_nested_status_body_is_previewed_not_parsed() -> None:
    verdict, detail = classify(503, "{" + "[" * 100_000, None)
    assert verdict is Verdict.UNHEALTHY
    assert detail.startswith("HTTP 503 '{[[[")
