"""koord-manager-health over states captured from the real koord-manager v1.6.0 in the sandbox: `/readyz` only
(upstream registers no `/healthz`), through the pod proxy on the kit's fake API server.

Healthy is ok; frozen fails naming every pod as not answering (the API server itself still answers); CrashLoopBackOff
fails with the API server's 503 per pod; kruise faults leave it ok; the koord-scheduler and descheduler pods in the
captures are never asked (only the Deployment's selector counts).
"""

from __future__ import annotations

import pytest

from kit import FakeApiServer, fake_cluster
from kit.managers import STATES, each_state, load, serve
from outpost.checks import koord_manager_health
from outpost.checks.koord_manager_health import KoordManagerHealthParams
from outpost.cluster import pod_proxy
from outpost.cluster.probes import CONTROL_PATH
from outpost.errors import ClusterError
from outpost.result import Result, Status

NS = "koordinator-system"
DEPLOYMENT = "deployment koordinator-system/koord-manager"
MANAGER = "koord-manager-"
"""Name prefix of the manager's pods, to tell them from the scheduler's and descheduler's in the same namespace."""
CKX4F, WJGHZ = "koord-manager-6b4f5dd6d7-ckx4f", "koord-manager-6b4f5dd6d7-wjghz"
TIMEOUT = 0.5
"""Per-pod timeout of the table's runs: the fake serves a captured hang as an immediate read timeout, so this only
sets the "within N s" the lines name; kept small so that a real wait, should the kit ever make one, is short."""

CAPTURED: dict[str, tuple[Status, str, list[str]]] = {
    "healthy": (Status.OK, f"{DEPLOYMENT}: 2/2 pods answer /readyz", []),
    # Faults aimed at kruise-manager: koord-manager is not touched.
    "scaled_to_zero_kruise": (Status.OK, f"{DEPLOYMENT}: 2/2 pods answer /readyz", []),
    "lease_stolen_kruise": (Status.OK, f"{DEPLOYMENT}: 2/2 pods answer /readyz", []),
    "manager_down_kruise": (Status.OK, f"{DEPLOYMENT}: 2/2 pods answer /readyz", []),
    # SIGSTOP: the API server waits on the pod for ever; it answers its own /version, so the silence is the pod's.
    "manager_frozen_koord": (
        Status.FAILED,
        f"{DEPLOYMENT}: 0/2 pods healthy; failing: {CKX4F}, {WJGHZ}",
        [
            f"pod {NS}/{CKX4F} :8000/readyz: no answer within {TIMEOUT:g} s through the API server proxy",
            f"pod {NS}/{WJGHZ} :8000/readyz: no answer within {TIMEOUT:g} s through the API server proxy",
        ],
    ),
    "manager_down_koord": (
        Status.FAILED,
        f"{DEPLOYMENT}: 0/2 pods healthy; failing: {CKX4F}, {WJGHZ}",
        [
            f"pod {NS}/{CKX4F} :8000/readyz: HTTP 503 (error trying to reach service: dial tcp 10.246.0.3:8000: "
            "connect: connection refused) (want 200)",
            f"pod {NS}/{WJGHZ} :8000/readyz: HTTP 503 (error trying to reach service: dial tcp 10.246.0.4:8000: "
            "connect: connection refused) (want 200)",
        ],
    ),
}


def run(api: FakeApiServer, params: KoordManagerHealthParams | None = None) -> Result:
    params = params or KoordManagerHealthParams()
    with fake_cluster(api) as cluster:
        data = koord_manager_health.CHECK.fetch(cluster, params)
    return koord_manager_health.CHECK.evaluate(data, params, load("healthy").captured_at)


def test_every_captured_state_is_judged_here() -> None:
    assert sorted(CAPTURED) == sorted(STATES)


@each_state(CAPTURED)
def test_captured_states(state_name: str, status: Status, summary: str, errors: list[str]) -> None:
    state = load(state_name)
    api = serve(state)
    result = run(api, KoordManagerHealthParams(timeout_seconds=TIMEOUT))
    assert (result.status, result.summary, result.errors) == (status, summary, errors)
    # Each failing pod's line comes with its own next step, naming that pod.
    assert [(step.failure, step.command) for step in result.next_steps] == [
        ("pod-not-ready", f"kubectl -n {NS} describe pod {pod}") for pod in ((CKX4F, WJGHZ) if errors else ())
    ]
    proxied = sorted(r.path for r in api.requests if "/proxy/" in r.path)
    assert proxied == [pod_proxy(NS, pod, 8000, "/readyz") for pod in state.pods(NS, MANAGER)]  # /readyz only
    assert sorted(result.details["pods"]) == [CKX4F, WJGHZ]  # never the scheduler's or descheduler's pods
    # The control request is made exactly when some pod did not answer: only the frozen capture.
    assert (CONTROL_PATH in [r.path for r in api.requests]) is (state_name == "manager_frozen_koord")


def test_the_frozen_capture_is_an_error_when_the_api_server_is_silent_too() -> None:
    """The same two silent pods, but `/version` unanswered as well: nothing was observed, so no verdict on them."""
    api = serve(load("manager_frozen_koord")).hang(CONTROL_PATH)
    with (
        fake_cluster(api) as cluster,
        pytest.raises(
            ClusterError,
            match=(
                f"pod {NS}/{CKX4F} :8000/readyz: no answer within 0.5 s, and the API server itself does not answer: "
                r".* \(and 1 more endpoint\(s\) not observed\)"
            ),
        ),
    ):
        koord_manager_health.CHECK.fetch(cluster, KoordManagerHealthParams(timeout_seconds=TIMEOUT))


def test_the_kit_serves_only_a_captured_timeout_as_a_hang() -> None:
    """The frozen capture's silences are read timeouts (served as hangs, judged above); a silence of another kind
    (here the API server itself unreachable) is refused by the kit rather than blamed on the pod."""
    state = load("manager_frozen_koord")
    key = f"{NS}/{CKX4F} /readyz"
    assert state.answers[key] == (
        None,
        f"ClusterTimeout: GET {pod_proxy(NS, CKX4F, 8000, '/readyz')} on cluster "
        "outpost-sandbox: read timed out after 5.0 s",
    )
    unreachable = (None, "ClusterUnreachable: cannot connect to https://127.0.0.1:6443")
    odd = state.replaced(answers={key: unreachable})
    with pytest.raises(
        AssertionError,
        match=f"{key} was not answered when captured, for a reason the kit cannot serve: ClusterUnreachable",
    ):
        serve(odd)


@pytest.mark.parametrize(
    ("answers", "status", "errors"),
    [
        # controller-runtime's failure body (docs/contracts.md) on one pod: the other still serves.
        (
            {WJGHZ: (500, "[-]webhook-ready failed: reason withheld\nhealthz check failed\n")},
            Status.DEGRADED,
            [
                f"pod {NS}/{WJGHZ} :8000/readyz: HTTP 500 '[-]webhook-ready failed: reason withheld healthz check "
                f"failed' "
                "(want 200)"
            ],
        ),
        # A 200 from something else on the port is not readiness (the check's `expect_body`).
        (
            {CKX4F: (200, "[-]not-this-body\n"), WJGHZ: (200, "[-]not-this-body\n")},
            Status.FAILED,
            [
                f"pod {NS}/{pod} :8000/readyz: HTTP 200 with body '[-]not-this-body' (want 'ok')"
                for pod in (CKX4F, WJGHZ)
            ],
        ),
    ],
)
def test_failing_answers_over_the_healthy_capture(
    answers: dict[str, tuple[int, str]], status: Status, errors: list[str]
) -> None:
    api = serve(load("healthy"))
    for pod, (code, body) in answers.items():
        api.respond(pod_proxy(NS, pod, 8000, "/readyz"), code, body)
    result = run(api)
    assert (result.status, result.errors) == (status, errors)
    assert [step.failure for step in result.next_steps] == ["pod-not-ready"] * len(errors)
    assert all(f"kubectl -n {NS} describe pod {MANAGER}" in step.command for step in result.next_steps)


def test_koord_manager_healthz_404_is_not_mistaken_for_readiness() -> None:
    """A configuration asking /healthz (the tutorial's) sees upstream's 404 and says so per pod."""
    state = load("healthy")
    api = serve(state)
    for pod in state.pods(NS, MANAGER):
        api.respond(pod_proxy(NS, pod, 8000, "/healthz"), 404, "404 page not found\n")
    result = run(api, KoordManagerHealthParams(paths=["/healthz"]))
    assert result.status is Status.FAILED
    assert result.errors == [
        f"pod {NS}/{pod} :8000/healthz: HTTP 404 '404 page not found' (want 200)" for pod in (CKX4F, WJGHZ)
    ]


def test_scaled_to_zero_is_failed() -> None:
    state = load("healthy")
    api = FakeApiServer().add_all(o for o in state.objects if o["kind"] != "Pod")
    deployment = dict(state.one("Deployment", "koord-manager"))
    deployment["spec"] = {**deployment["spec"], "replicas": 0}
    api.add(deployment)
    result = run(api)
    assert result.status is Status.FAILED
    assert result.errors == [f"{DEPLOYMENT}: observed 0 pods (scaled to 0) (want at least 1 answering /readyz)"]
    assert [(step.failure, step.command) for step in result.next_steps] == [
        ("no-pods", f"kubectl -n {NS} describe deployment koord-manager")
    ]


@pytest.mark.parametrize(
    ("ready_answer", "status"),
    [
        ((200, "ok"), Status.OK),
        # --feature-gates=WebhookFramework=false: no readyz check is registered, so controller-runtime mounts no
        # /readyz and the port answers 404 everywhere (see the module doc): every pod fails, each named.
        ((404, "404 page not found\n"), Status.FAILED),
    ],
)
def test_readyz_without_the_webhook_framework_gate_fails_every_pod(
    ready_answer: tuple[int, str], status: Status
) -> None:
    state = load("healthy")
    api = serve(state)
    for pod in state.pods(NS, MANAGER):
        api.respond(pod_proxy(NS, pod, 8000, "/readyz"), *ready_answer)
    result = run(api)
    assert result.status is status
    if status is Status.FAILED:
        assert result.errors == [
            f"pod {NS}/{pod} :8000/readyz: HTTP 404 '404 page not found' (want 200)" for pod in (CKX4F, WJGHZ)
        ]
