"""kruise-manager-health over captured sandbox states: the real fetch through the real `Cluster` on the kit's
fake API server (Deployment, pods, the pod proxy's captured answers), then evaluate. `/readyz` only by default:
kruise-manager v1.8.0 registers no healthz check, so its `/healthz` answers 404 (the fixtures' kruise `/healthz`
answers are the real manager's, see tests/unit/fixtures/managers/capture.py).

Also covers what `outpost.checks.manager_pods` does for both manager checks: the Deployment's selector,
terminating pods, degraded vs failed, the optional body match, and what is `error`.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kit import FakeApiServer, fake_cluster
from kit.managers import State, load, serve
from outpost.checks import kruise_manager_health
from outpost.checks.kruise_manager_health import KruiseManagerHealthParams
from outpost.cluster import pod_proxy
from outpost.cluster.probes import CONTROL_PATH
from outpost.errors import ClusterError, MalformedResponse
from outpost.kube import DEPLOYMENTS
from outpost.result import Result, Status

NS = "kruise-system"


def run(api: FakeApiServer, params: KruiseManagerHealthParams | None = None, state: State | None = None) -> Result:
    params = params or KruiseManagerHealthParams()
    with fake_cluster(api) as cluster:
        data = kruise_manager_health.fetch(cluster, params)
    return kruise_manager_health.evaluate(data, params, state.captured_at if state else load("healthy").captured_at)


@pytest.mark.parametrize(("state_name", "status", "summary", "error_has"), [
    ("healthy", Status.OK, "deployment kruise-system/kruise-controller-manager: 2/2 pods answer /readyz", None),
    ("backend_500_kruise", Status.FAILED, "0/2 pods healthy; failing: kruise-controller-manager-",
     ":8000/readyz: HTTP 500 '[-]webhook-ready failed: reason withheld healthz check failed' (want 200)"),
    ("backend_down_kruise", Status.FAILED, "0/2 pods healthy",
     ":8000/readyz: HTTP 503 (error trying to reach service: read tcp"),
    ("scaled_to_zero_kruise", Status.FAILED,
     "deployment kruise-system/kruise-controller-manager: observed 0 pods (scaled to 0)", None),
    ("backend_wrong_body_koord", Status.OK, "2/2 pods answer", None),  # the fault is aimed at koord-manager
])
def test_captured_states(state_name: str, status: Status, summary: str, error_has: str | None) -> None:
    state = load(state_name)
    api = serve(state)
    result = run(api, state=state)
    assert result.status is status, result.errors
    assert summary in result.summary
    proxied = sorted(r.path for r in api.requests if "/proxy/" in r.path)
    assert proxied == sorted(pod_proxy(NS, pod, 8000, "/readyz") for pod in state.pods(NS))  # never /healthz
    if error_has:
        assert len(result.errors) == 2  # two pods, every one named
        assert all(line.startswith("pod kruise-system/kruise-controller-manager-") for line in result.errors)
        assert any(error_has in line for line in result.errors)
    if status is Status.FAILED:
        assert "kruise-controller-manager" in result.errors[0]


def test_one_pod_failing_is_degraded_and_named() -> None:
    state = load("healthy")
    sick = state.pods(NS)[1]
    api = serve(state).respond(pod_proxy(NS, sick, 8000, "/readyz"), 500, "[-]webhook-ready failed: reason withheld\n")
    result = run(api)
    assert result.status is Status.DEGRADED
    assert result.summary.endswith(f"1/2 pods healthy; failing: {sick}")
    assert result.errors == [f"pod {NS}/{sick} :8000/readyz: HTTP 500 '[-]webhook-ready failed: reason withheld' "
                             "(want 200)"]
    healthy_pod = state.pods(NS)[0]
    assert [o["verdict"] for o in result.details["pods"][healthy_pod]] == ["healthy"]


def test_a_hanging_pod_is_unhealthy_once_the_api_server_answers() -> None:
    state = load("healthy")
    stuck = state.pods(NS)[0]
    api = serve(state).hang(pod_proxy(NS, stuck, 8000, "/readyz"))
    result = run(api, KruiseManagerHealthParams(timeout_seconds=1))
    assert result.status is Status.DEGRADED
    assert result.errors == [f"pod {NS}/{stuck} :8000/readyz: no answer within 1 s through the API server proxy"]
    assert CONTROL_PATH in [r.path for r in api.requests]


def test_a_hang_while_the_api_server_is_silent_is_an_error() -> None:
    state = load("healthy")
    api = serve(state).hang(pod_proxy(NS, state.pods(NS)[0], 8000, "/readyz")).hang(CONTROL_PATH)
    with fake_cluster(api) as cluster, pytest.raises(ClusterError, match="the API server itself does not answer"):
        kruise_manager_health.fetch(cluster, KruiseManagerHealthParams(timeout_seconds=1))


@pytest.mark.parametrize("status", [401, 403, 429, 302])
def test_refused_or_limited_proxy_is_an_error(status: int) -> None:
    state = load("healthy")
    api = serve(state).respond(pod_proxy(NS, state.pods(NS)[0], 8000, "/readyz"), status, "")
    with fake_cluster(api) as cluster, pytest.raises(ClusterError, match=f"HTTP {status}"):
        kruise_manager_health.fetch(cluster, KruiseManagerHealthParams())


def test_wrong_body_fails_with_the_body_match_and_passes_without() -> None:
    state = load("healthy")
    api = serve(state)
    for pod in state.pods(NS):
        api.respond(pod_proxy(NS, pod, 8000, "/readyz"), 200, "[-]not-this-body\n")
    matched = run(api)
    assert matched.status is Status.FAILED
    assert all("HTTP 200 with body '[-]not-this-body' (want 'ok')" in line for line in matched.errors)
    assert run(api, KruiseManagerHealthParams(expect_body=None)).status is Status.OK


def test_the_deployment_absent_is_failed_naming_it() -> None:
    api = FakeApiServer()  # a cluster set up the tutorial's way has no such Deployment
    result = run(api)
    assert result.status is Status.FAILED
    assert result.errors == ["deployment kruise-system/kruise-controller-manager: not found "
                             "(want the manager Deployment)"]


def test_pods_come_from_the_deployments_own_selector_and_leaving_or_finished_ones_are_left_out() -> None:
    state = load("healthy")
    objects: list[dict[str, Any]] = copy.deepcopy(state.objects)
    leaving = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == state.pods(NS)[0])
    leaving["metadata"]["deletionTimestamp"] = "2026-12-03T13:34:20Z"
    evicted = copy.deepcopy(leaving)
    evicted["metadata"] = {**evicted["metadata"], "name": "kruise-controller-manager-79857bc4f7-evict"}
    del evicted["metadata"]["deletionTimestamp"]
    evicted["status"] = {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}
    stranger = copy.deepcopy(evicted)
    stranger["metadata"] = {"name": "not-a-manager", "namespace": NS, "labels": {"app": "other"}}
    stranger["status"] = leaving["status"]
    api = serve(State(state.name, state.captured_at, [*objects, evicted, stranger], state.health))
    result = run(api)
    assert result.status is Status.OK
    assert result.summary.endswith("1/1 pods answer /readyz")
    assert result.details["left_out"] == [f"{state.pods(NS)[0]} (terminating)",
                                          "kruise-controller-manager-79857bc4f7-evict (phase Failed)"]
    pods_list = next(r for r in api.requests if r.path == f"/api/v1/namespaces/{NS}/pods")
    assert pods_list.param("labelSelector") == "control-plane=controller-manager"
    probed = sorted(r.path for r in api.requests if "/proxy/" in r.path)  # concurrent: any order
    assert probed == [pod_proxy(NS, state.pods(NS)[1], 8000, "/readyz")]


def test_a_malformed_deployment_is_an_error() -> None:
    state = load("healthy")
    deployment = copy.deepcopy(state.one("Deployment", "kruise-controller-manager"))
    deployment["status"]["readyReplicas"] = "two"
    api = serve(state).add(deployment)
    with fake_cluster(api) as cluster, pytest.raises(MalformedResponse, match=r"status\.readyReplicas"):
        kruise_manager_health.fetch(cluster, KruiseManagerHealthParams())


def test_tutorial_setup_works_by_configuration() -> None:
    api = serve(load("healthy"), port=8080)  # health on 8080, as the tutorial has it
    result = run(api, KruiseManagerHealthParams(port=8080))
    assert result.status is Status.OK
    proxied = [r.path for r in api.requests if "/proxy/" in r.path]
    assert len(proxied) == 2
    assert all(":8080/proxy/" in path for path in proxied)
    assert api.requests[0].path.endswith(f"/{DEPLOYMENTS.plural}/kruise-controller-manager")


@pytest.mark.parametrize(("paths", "status", "failing"), [
    (["/readyz"], Status.OK, []),
    (["/healthz"], Status.FAILED, ["/healthz"]),  # the tutorial's and the old default's liveness path
    (["/healthz", "/readyz"], Status.FAILED, ["/healthz"]),
])
def test_healthz_answers_404_on_every_real_pod(paths: list[str], status: Status, failing: list[str]) -> None:
    state = load("healthy")
    result = run(serve(state), KruiseManagerHealthParams(paths=paths))
    assert result.status is status
    assert result.errors == [f"pod {NS}/{pod} :8000{path}: HTTP 404 '404 page not found' (want 200)"
                             for pod in state.pods(NS) for path in failing]


def test_the_verbose_readyz_body_is_not_the_plain_ok() -> None:
    """controller-runtime's verbose body says `healthz check passed` on /readyz: 200, but not the body `ok`."""
    state = load("healthy")
    api = serve(state)
    for pod in state.pods(NS):
        api.respond(pod_proxy(NS, pod, 8000, "/readyz"), 200, "[+]webhook-ready ok\nhealthz check passed\n")
    assert run(api).status is Status.FAILED
    assert run(api, KruiseManagerHealthParams(expect_body=None)).status is Status.OK
