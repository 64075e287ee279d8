"""kruise-manager-health over states captured from the real kruise-manager v1.8.0 in the sandbox, through the real
`Cluster` on the kit's fake API server. `/readyz` only by default: v1.8.0 registers no healthz check (404).

Healthy is ok, scaled to 0 and CrashLoopBackOff are failed (the API server's 503 named per pod), a stolen Lease
is invisible here (leader-leases' job), koord faults leave it ok; the real failure body is served over the
healthy capture, since no fault makes the manager give it. Also covers `outpost.families.manager_pods`.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kit import FakeApiServer, fake_cluster
from kit.managers import MANAGERS_FIXTURES, STATES, State, load, serve
from outpost.checks import kruise_manager_health
from outpost.checks.kruise_manager_health import KruiseManagerHealthParams
from outpost.cluster import pod_proxy
from outpost.cluster.probes import CONTROL_PATH
from outpost.errors import ClusterError, MalformedResponse
from outpost.kube import DEPLOYMENTS
from outpost.result import Result, Status

NS = "kruise-system"
DEPLOYMENT = "deployment kruise-system/kruise-controller-manager"
READYZ_FAILED = "[-]webhook-ready failed: reason withheld\nhealthz check failed\n"
"""The real manager's /readyz body when its webhook-ready check fails (docs/contracts.md, OpenKruise)."""

# The replicas after the sandbox scaled the Deployment back up (every capture after scaled_to_zero_kruise).
KMRH9, ZF4BW = "kruise-controller-manager-cf4747b9-kmrh9", "kruise-controller-manager-cf4747b9-zf4bw"

DESCRIBE_DEPLOYMENT = f"kubectl -n {NS} describe deployment kruise-controller-manager"

# state: (status, summary, error lines, each line's next (failure class, command))
CAPTURED: dict[str, tuple[Status, str, list[str], list[tuple[str, str]]]] = {
    "healthy": (Status.OK, f"{DEPLOYMENT}: 2/2 pods answer /readyz", [], []),
    "scaled_to_zero_kruise": (
        Status.FAILED,
        f"{DEPLOYMENT}: observed 0 pods (scaled to 0) (want at least 1 answering /readyz)",
        [f"{DEPLOYMENT}: observed 0 pods (scaled to 0) (want at least 1 answering /readyz)"],
        [("no-pods", DESCRIBE_DEPLOYMENT)],
    ),
    # The thief's Lease makes the manager exit and restart ready but not leading: /readyz cannot tell.
    "lease_stolen_kruise": (Status.OK, f"{DEPLOYMENT}: 2/2 pods answer /readyz", [], []),
    # Both processes killed: the API server cannot dial the port and says so itself (a Status body, 503).
    "manager_down_kruise": (
        Status.FAILED,
        f"{DEPLOYMENT}: 0/2 pods healthy; failing: {KMRH9}, {ZF4BW}",
        [
            f"pod {NS}/{KMRH9} :8000/readyz: HTTP 503 (error trying to reach service: dial tcp 10.246.0.5:8000: "
            "connect: connection refused) (want 200)",
            f"pod {NS}/{ZF4BW} :8000/readyz: HTTP 503 (error trying to reach service: dial tcp 10.246.0.6:8000: "
            "connect: connection refused) (want 200)",
        ],
        [("pod-not-ready", f"kubectl -n {NS} describe pod {pod}") for pod in (KMRH9, ZF4BW)],
    ),
    # Aimed at koord-manager: kruise-manager is not touched (the hanging koord pods are never asked).
    "manager_frozen_koord": (Status.OK, f"{DEPLOYMENT}: 2/2 pods answer /readyz", [], []),
    "manager_down_koord": (Status.OK, f"{DEPLOYMENT}: 2/2 pods answer /readyz", [], []),
}


def run(api: FakeApiServer, params: KruiseManagerHealthParams | None = None, state: State | None = None) -> Result:
    params = params or KruiseManagerHealthParams()
    with fake_cluster(api) as cluster:
        data = kruise_manager_health.CHECK.fetch(cluster, params)
    return kruise_manager_health.CHECK.evaluate(
        data, params, state.captured_at if state else load("healthy").captured_at
    )


def test_every_captured_state_is_known_to_the_kit_and_judged_here() -> None:
    """A new capture must be added to the kit's STATES and to this table; a stale one must go from the disk."""
    assert sorted(p.stem for p in MANAGERS_FIXTURES.glob("*.json")) == sorted(STATES)
    assert sorted(CAPTURED) == sorted(STATES)


@pytest.mark.parametrize(
    ("state_name", "status", "summary", "errors", "steps"),
    [(name, *case) for name, case in CAPTURED.items()],
    ids=list(CAPTURED),
)
def test_captured_states(
    state_name: str, status: Status, summary: str, errors: list[str], steps: list[tuple[str, str]]
) -> None:
    state = load(state_name)
    api = serve(state)
    result = run(api, state=state)
    assert (result.status, result.summary, result.errors) == (status, summary, errors)
    assert [(step.failure, step.command) for step in result.next_steps] == steps
    proxied = sorted(r.path for r in api.requests if "/proxy/" in r.path)
    assert proxied == [pod_proxy(NS, pod, 8000, "/readyz") for pod in state.pods(NS)]  # never /healthz
    assert result.details["left_out"] == []  # CrashLoopBackOff pods are phase Running: probed, not left out


def test_a_crash_looping_manager_is_running_but_not_ready_in_the_capture() -> None:
    """Why the 503s of manager_down_kruise are the pods' and not a selector slip: they are the Deployment's pods,
    phase Running, NotReady, container waiting in CrashLoopBackOff."""
    state = load("manager_down_kruise")
    for pod in (state.one("Pod", name) for name in state.pods(NS)):
        assert pod["status"]["phase"] == "Running"
        assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "False"
        assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"


@pytest.mark.parametrize(
    ("sick", "status", "summary"),
    [
        (1, Status.DEGRADED, f"{DEPLOYMENT}: 1/2 pods healthy; failing: kruise-controller-manager-cf4747b9-c4wrh"),
        (
            2,
            Status.FAILED,
            f"{DEPLOYMENT}: 0/2 pods healthy; failing: kruise-controller-manager-cf4747b9-8qm55, "
            "kruise-controller-manager-cf4747b9-c4wrh",
        ),
    ],
)
def test_the_real_failure_body_fails_each_pod_and_names_it(sick: int, status: Status, summary: str) -> None:
    state = load("healthy")
    failing = state.pods(NS)[-sick:]
    api = serve(state)
    for pod in failing:
        api.respond(pod_proxy(NS, pod, 8000, "/readyz"), 500, READYZ_FAILED)
    result = run(api)
    assert (result.status, result.summary) == (status, summary)
    assert result.errors == [
        f"pod {NS}/{pod} :8000/readyz: HTTP 500 '[-]webhook-ready failed: reason withheld "
        "healthz check failed' (want 200)"
        for pod in failing
    ]
    for pod in state.pods(NS):
        assert [o["verdict"] for o in result.details["pods"][pod]] == ["unhealthy" if pod in failing else "healthy"]


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
        kruise_manager_health.CHECK.fetch(cluster, KruiseManagerHealthParams(timeout_seconds=1))


@pytest.mark.parametrize("status", [401, 403, 429, 302])
def test_refused_or_limited_proxy_is_an_error(status: int) -> None:
    state = load("healthy")
    api = serve(state).respond(pod_proxy(NS, state.pods(NS)[0], 8000, "/readyz"), status, "")
    with fake_cluster(api) as cluster, pytest.raises(ClusterError, match=f"HTTP {status}"):
        kruise_manager_health.CHECK.fetch(cluster, KruiseManagerHealthParams())


def test_wrong_body_fails_with_the_body_match_and_passes_without() -> None:
    state = load("healthy")
    api = serve(state)
    for pod in state.pods(NS):
        api.respond(pod_proxy(NS, pod, 8000, "/readyz"), 200, "[-]not-this-body\n")
    matched = run(api)
    assert matched.status is Status.FAILED
    assert matched.errors == [
        f"pod {NS}/{pod} :8000/readyz: HTTP 200 with body '[-]not-this-body' (want 'ok')" for pod in state.pods(NS)
    ]
    assert run(api, KruiseManagerHealthParams(expect_body=None)).status is Status.OK


def test_pods_come_from_the_deployments_own_selector_and_leaving_or_finished_ones_are_left_out() -> None:
    state = load("healthy")
    objects: list[dict[str, Any]] = copy.deepcopy(state.objects)
    leaving = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == state.pods(NS)[0])
    leaving["metadata"]["deletionTimestamp"] = "2026-12-04T18:04:40Z"
    evicted = copy.deepcopy(leaving)
    evicted["metadata"] = {**evicted["metadata"], "name": "kruise-controller-manager-cf4747b9-evict"}
    del evicted["metadata"]["deletionTimestamp"]
    evicted["status"] = {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}
    stranger = copy.deepcopy(evicted)
    stranger["metadata"] = {"name": "not-a-manager", "namespace": NS, "labels": {"app": "other"}}
    stranger["status"] = leaving["status"]
    api = serve(state.replaced([*objects, evicted, stranger]))
    result = run(api)
    assert result.status is Status.OK
    assert result.summary == f"{DEPLOYMENT}: 1/1 pods answer /readyz"
    assert result.details["left_out"] == [
        f"{state.pods(NS)[0]} (terminating)",
        "kruise-controller-manager-cf4747b9-evict (phase Failed)",
    ]
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
        kruise_manager_health.CHECK.fetch(cluster, KruiseManagerHealthParams())


def test_tutorial_setup_works_by_configuration() -> None:
    api = serve(load("healthy"), port=8080)  # health on 8080, as the tutorial has it
    result = run(api, KruiseManagerHealthParams(port=8080))
    assert result.status is Status.OK
    proxied = [r.path for r in api.requests if "/proxy/" in r.path]
    assert len(proxied) == 2
    assert all(":8080/proxy/" in path for path in proxied)
    assert api.requests[0].path.endswith(f"/{DEPLOYMENTS.plural}/kruise-controller-manager")


@pytest.mark.parametrize(
    ("paths", "status", "failing"),
    [
        (["/readyz"], Status.OK, []),
        (["/healthz"], Status.FAILED, ["/healthz"]),  # the tutorial's and the old default's liveness path
        (["/healthz", "/readyz"], Status.FAILED, ["/healthz"]),
    ],
)
def test_healthz_answers_404_on_every_real_pod(paths: list[str], status: Status, failing: list[str]) -> None:
    state = load("healthy")
    result = run(serve(state), KruiseManagerHealthParams(paths=paths))
    assert result.status is status
    assert result.errors == [
        f"pod {NS}/{pod} :8000{path}: HTTP 404 '404 page not found' (want 200)"
        for pod in state.pods(NS)
        for path in failing
    ]


def test_the_verbose_readyz_body_is_not_the_plain_ok() -> None:
    """controller-runtime's verbose body says `healthz check passed` on /readyz: 200, but not the body `ok`."""
    state = load("healthy")
    api = serve(state)
    for pod in state.pods(NS):
        api.respond(pod_proxy(NS, pod, 8000, "/readyz"), 200, "[+]webhook-ready ok\nhealthz check passed\n")
    assert run(api).status is Status.FAILED
    assert run(api, KruiseManagerHealthParams(expect_body=None)).status is Status.OK
