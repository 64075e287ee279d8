"""koord-manager-health over captured sandbox states: `/readyz` only (upstream registers no `/healthz`),
through the pod proxy, the real fetch on the kit's fake API server, then evaluate."""

from __future__ import annotations

import pytest

from kit import FakeApiServer, fake_cluster
from kit.managers import load, serve
from outpost.checks import koord_manager_health
from outpost.checks.koord_manager_health import KoordManagerHealthParams
from outpost.cluster import pod_proxy
from outpost.result import Result, Status

NS = "koordinator-system"


def run(api: FakeApiServer, params: KoordManagerHealthParams | None = None) -> Result:
    params = params or KoordManagerHealthParams()
    with fake_cluster(api) as cluster:
        data = koord_manager_health.fetch(cluster, params)
    return koord_manager_health.evaluate(data, params, load("healthy").captured_at)


@pytest.mark.parametrize(("state_name", "status", "error_has"), [
    ("healthy", Status.OK, None),
    ("backend_500_kruise", Status.OK, None),  # aimed at kruise-manager: koord-manager is not touched
    ("backend_wrong_body_koord", Status.FAILED, ":8000/readyz: HTTP 200 with body '[-]not-this-body' (want 'ok')"),
])
def test_captured_states(state_name: str, status: Status, error_has: str | None) -> None:
    state = load(state_name)
    api = serve(state)
    result = run(api)
    assert result.status is status, result.errors
    proxied = sorted(r.path for r in api.requests if "/proxy/" in r.path)
    assert proxied == sorted(pod_proxy(NS, pod, 8000, "readyz") for pod in state.pods(NS))  # /readyz only
    if error_has:
        assert result.summary.startswith("deployment koordinator-system/koord-manager: 0/2 pods healthy; failing: ")
        assert [line.partition(" :")[0] for line in result.errors] == [f"pod {NS}/{p}" for p in state.pods(NS)]
        assert all(error_has in line for line in result.errors)
    else:
        assert result.summary == "deployment koordinator-system/koord-manager: 2/2 pods answer /readyz"


def test_koord_manager_healthz_404_is_not_mistaken_for_readiness() -> None:
    """A configuration asking /healthz (the tutorial's) sees upstream's 404 and says so per pod."""
    state = load("healthy")
    api = serve(state)
    for pod in state.pods(NS):
        api.respond(pod_proxy(NS, pod, 8000, "/healthz"), 404, "404 page not found\n")
    result = run(api, KoordManagerHealthParams(paths=["/healthz"]))
    assert result.status is Status.FAILED
    assert all(line.endswith(":8000/healthz: HTTP 404 '404 page not found' (want 200)") for line in result.errors)


def test_scaled_to_zero_is_failed() -> None:
    state = load("healthy")
    api = FakeApiServer().add_all(o for o in state.objects if o["kind"] != "Pod")
    deployment = dict(state.one("Deployment", "koord-manager"))
    deployment["spec"] = {**deployment["spec"], "replicas": 0}
    api.add(deployment)
    result = run(api)
    assert result.status is Status.FAILED
    assert result.errors == ["deployment koordinator-system/koord-manager: observed 0 pods (scaled to 0) "
                             "(want at least 1 answering /readyz)"]


def test_tutorial_names_without_the_deployment_fail_naming_it() -> None:
    result = run(serve(load("healthy")), KoordManagerHealthParams(deployment="koordinator-manager"))
    assert result.status is Status.FAILED
    assert result.errors == ["deployment koordinator-system/koordinator-manager: not found "
                             "(want the manager Deployment)"]


@pytest.mark.parametrize(("ready_answer", "status"), [
    ((200, "ok"), Status.OK),
    # --feature-gates=WebhookFramework=false: no readyz check is registered, so controller-runtime mounts no
    # /readyz and the port answers 404 everywhere (see the module doc): every pod fails, each named.
    ((404, "404 page not found\n"), Status.FAILED),
])
def test_readyz_without_the_webhook_framework_gate_fails_every_pod(ready_answer: tuple[int, str],
                                                                    status: Status) -> None:
    state = load("healthy")
    api = serve(state)
    for pod in state.pods(NS):
        api.respond(pod_proxy(NS, pod, 8000, "/readyz"), *ready_answer)
    result = run(api)
    assert result.status is status
    if status is Status.FAILED:
        assert result.errors == [f"pod {NS}/{pod} :8000/readyz: HTTP 404 '404 page not found' (want 200)"
                                 for pod in state.pods(NS)]
