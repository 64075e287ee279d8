"""ls-latency over the sandbox LS workload's captured answers (healthy, backend-500, backend-down through
the proxy, backend-slow), the fake API server for timeouts and refusals, and the parameters' validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kit import NOW, FakeApiServer, fake_cluster
from outpost.checks import ls_latency
from outpost.checks.ls_latency import LsEndpoint, LsLatencyData, LsLatencyParams, Observation
from outpost.result import Status

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox" / "workload-checks"
PROXY = "/api/v1/namespaces/default/services/ls-web:80/proxy/"
WEB = LsEndpoint(name="ls-web", proxy_path=PROXY)
PARAMS = LsLatencyParams(endpoints=[WEB])


def captured(state: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CAPTURED / f"ls.{state}.json").read_text())
    return data


def observed(state: str, endpoint: LsEndpoint = WEB) -> Observation:
    answer = captured(state)
    return Observation(endpoint, answer["status"], answer["elapsed_ms"], answer["body"])


def judge(*observations: Observation) -> Any:
    params = LsLatencyParams(endpoints=[o.endpoint for o in observations])
    return ls_latency.evaluate(LsLatencyData(list(observations)), params, NOW)


@pytest.mark.parametrize(
    ("state", "status", "message", "failure"),
    [
        ("healthy", Status.OK, None, None),
        (
            "backend-500",
            Status.FAILED,
            "ls endpoint ls-web (service default/ls-web:80 /): observed HTTP 500 'internal server error' in 8 ms "
            "(want HTTP 200 within 500 ms)",
            "endpoint-down",
        ),
        ("backend-down", Status.FAILED, "observed HTTP 503 'error trying to reach service: read tcp", "endpoint-down"),
        ("backend-slow", Status.FAILED, "observed HTTP 200 in 3007 ms (want within 2000 ms)", "endpoint-too-slow"),
    ],
)
def test_evaluate_captured(state: str, status: Status, message: str | None, failure: str | None) -> None:
    result = judge(observed(state))
    assert result.status is status, result
    if message is None:
        assert result.errors == []
        assert "1 LS endpoint(s) answered as expected" in result.summary
    else:
        assert any(message in line for line in result.errors), result.errors
        (step,) = result.next_steps
        assert step.failure == failure
        assert step.command == "kubectl -n default describe service ls-web"
        assert step.see == "kubectl -n default logs service/ls-web --tail=200"
    (endpoint,) = result.details["endpoints"]
    assert endpoint["status_code"] == captured(state)["status"]
    assert endpoint["elapsed_ms"] == captured(state)["elapsed_ms"]


SHOP = LsEndpoint(name="shop", url="https://shop.example/health?token=abc")
POD = LsEndpoint(name="p", proxy_path="/api/v1/namespaces/shop/pods/https:web-0:8443/proxy/healthz")


@pytest.mark.parametrize(
    ("obs", "status", "message", "failure"),
    [
        (
            Observation(WEB, 200, 800, "ok"),
            Status.DEGRADED,
            "observed HTTP 200 in 800 ms (want HTTP 200 within 500",
            "endpoint-slow",
        ),
        (Observation(WEB, 200, 500, "ok"), Status.OK, None, None),
        (Observation(WEB, 204, 5, ""), Status.FAILED, "observed HTTP 204", "endpoint-down"),
        (Observation(WEB, 429, 5, ""), Status.ERROR, "HTTP 429 rate limited", "endpoint-not-observed"),
        (Observation(WEB, 302, 5, ""), Status.ERROR, "HTTP 302 redirect (not followed)", "endpoint-not-observed"),
        (
            Observation(WEB, no_answer="no answer within 2000 ms"),
            Status.FAILED,
            "observed no answer within 2000 ms",
            "endpoint-down",
        ),
        (
            Observation(WEB, unobserved="GET ...: HTTP 403"),
            Status.ERROR,
            "not observed: GET ...: HTTP 403",
            "endpoint-not-observed",
        ),
        (Observation(LsEndpoint(name="w", proxy_path=PROXY, expected_status=302), 302, 5, ""), Status.OK, None, None),
        (
            Observation(LsEndpoint(name="w", proxy_path=PROXY, expect_body="ready"), 200, 5, "ok\n"),
            Status.FAILED,
            "without 'ready' in the body",
            "endpoint-down",
        ),
        (Observation(SHOP, 200, 3000, "ok"), Status.FAILED, "in 3000 ms (want within 2000 ms)", "url-failing"),
        (Observation(SHOP, 200, 900, "ok"), Status.DEGRADED, "in 900 ms", "url-slow"),
        (Observation(SHOP, 301, 5, ""), Status.ERROR, "HTTP 301 redirect", "url-not-observed"),
        (Observation(POD, 500, 5, "boom"), Status.FAILED, "observed HTTP 500 'boom'", "endpoint-down"),
    ],
)
def test_evaluate_table(obs: Observation, status: Status, message: str | None, failure: str | None) -> None:
    result = judge(obs)
    assert result.status is status, result
    if message is None:
        assert result.errors == []
    else:
        assert any(message in line for line in result.errors), result.errors
        (step,) = result.next_steps
        assert step.failure == failure
        assert step.command == {
            WEB: "kubectl -n default describe service ls-web",
            SHOP: "curl -sS -i --max-time 10 'https://shop.example/health' | head -n 20",
            POD: "kubectl -n shop describe pod web-0",
        }.get(obs.endpoint, "kubectl -n default describe service ls-web")


def test_one_failing_endpoint_among_several_fails_and_names_it() -> None:
    other = LsEndpoint(name="shop", url="https://shop.example/health?token=abc")
    result = judge(observed("healthy"), observed("backend-500", other))
    assert result.status is Status.FAILED
    assert result.summary.startswith("1 of 2 LS endpoint(s) failing: ls endpoint shop (https://shop.example/health)")
    assert "token=abc" not in result.model_dump_json()


def test_failure_outranks_unobserved_and_slow() -> None:
    slow = LsEndpoint(name="slow", proxy_path=PROXY)
    lost = LsEndpoint(name="lost", proxy_path=PROXY)
    result = judge(Observation(slow, 200, 900, "ok"), Observation(lost, unobserved="x"), observed("backend-500"))
    assert result.status is Status.FAILED
    assert len(result.errors) == 3
    assert [step.failure for step in result.next_steps] == ["endpoint-down", "endpoint-not-observed", "endpoint-slow"]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"name": "x"}, "exactly one of proxy_path and url"),
        ({"name": "x", "proxy_path": PROXY, "url": "https://a.example/"}, "exactly one"),
        ({"name": "x", "proxy_path": "/api/v1/nodes/n1/proxy/"}, "service or pod proxy path"),
        ({"name": "x", "proxy_path": "/apis/x"}, "service or pod proxy path"),
        ({"name": "x", "url": "ftp://a.example/"}, "http:// or https://"),
        ({"name": "x", "url": "https://user:pw@a.example/"}, "must not carry credentials"),
        ({"name": "x", "url": "https://a.example/", "degraded_ms": 3000, "failed_ms": 2000}, "must not exceed"),
    ],
)
def test_endpoint_validation(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        LsEndpoint(**fields)


def test_params_need_endpoints_with_unique_names() -> None:
    with pytest.raises(ValidationError):
        LsLatencyParams(endpoints=[])
    with pytest.raises(ValidationError, match="unique"):
        LsLatencyParams(endpoints=[WEB, WEB])


def test_pod_proxy_endpoint_is_named_as_a_pod() -> None:
    pod = LsEndpoint(name="p", proxy_path="/api/v1/namespaces/shop/pods/web-0:8080/proxy/healthz")
    assert pod.ref == "ls endpoint p (pod shop/web-0:8080 /healthz)"


def fetch(api: FakeApiServer, params: LsLatencyParams = PARAMS) -> Any:
    with fake_cluster(api) as cluster:
        data = ls_latency.fetch(cluster, params)
    return ls_latency.evaluate(data, params, NOW)


def test_fetch_through_the_proxy() -> None:
    answer = captured("backend-500")
    result = fetch(FakeApiServer().respond(PROXY, answer["status"], answer["body"]))
    assert result.status is Status.FAILED
    assert "ls endpoint ls-web (service default/ls-web:80 /): observed HTTP 500" in result.errors[0]


def test_proxy_timeout_with_a_live_api_server_is_the_workload_failing() -> None:
    api = FakeApiServer().hang(PROXY).respond("/version", 200, {"major": "1"})
    result = fetch(api)
    assert result.status is Status.FAILED
    assert "observed no answer within 2000 ms" in result.errors[0]


def test_proxy_timeout_with_a_silent_api_server_is_error() -> None:
    api = FakeApiServer().hang(PROXY).hang("/version")
    result = fetch(api)
    assert result.status is Status.ERROR
    assert "the API server itself does not answer" in result.summary


def test_proxy_refused_identity_is_error() -> None:
    result = fetch(FakeApiServer().respond(PROXY, 403, {"kind": "Status", "message": "forbidden"}))
    assert result.status is Status.ERROR
    assert "HTTP 403" in result.summary
