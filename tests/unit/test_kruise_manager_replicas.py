"""kruise-manager-replicas over the Deployment captured from the real kruise-manager v1.8.0 in the sandbox:
readyReplicas against the minimum, an omitted readyReplicas (the API's zero) counting as 0, the Deployment absent
named.

What the captures prove: healthy is ok; scaled to 0 is failed with its spec.replicas 0; both manager processes
killed (`manager_down_kruise`: 2 replicas desired, both pods CrashLoopBackOff) is failed, the API having dropped
readyReplicas; a stolen Lease (the manager ready but not leading) and the faults aimed at koord-manager are ok, as
replica counts cannot see them. Fewer-than-desired and surge counts are edits of the healthy Deployment's status.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kit import FakeApiServer, fake_cluster
from kit.managers import STATES, each_state, failed_with, load
from outpost.checks import kruise_manager_replicas
from outpost.checks.kruise_manager_replicas import KruiseManagerReplicasData, KruiseManagerReplicasParams
from outpost.errors import MalformedResponse
from outpost.kube import Deployment, parse
from outpost.result import Status

NOW = load("healthy").captured_at
DEPLOYMENT = "deployment kruise-system/kruise-controller-manager"

CAPTURED: dict[str, tuple[Status, str, list[str]]] = {
    "healthy": (Status.OK, f"{DEPLOYMENT}: 2/2 replicas ready", []),
    "scaled_to_zero_kruise": failed_with(f"{DEPLOYMENT}: observed 0 ready replicas, spec.replicas 0 (want >= 1)"),
    "lease_stolen_kruise": (Status.OK, f"{DEPLOYMENT}: 2/2 replicas ready", []),
    # Still 2 desired, so no "spec.replicas" in the line: the replicas exist and are not ready.
    "manager_down_kruise": failed_with(f"{DEPLOYMENT}: observed 0 ready replicas (want >= 1)"),
    "manager_frozen_koord": (Status.OK, f"{DEPLOYMENT}: 2/2 replicas ready", []),
    "manager_down_koord": (Status.OK, f"{DEPLOYMENT}: 2/2 replicas ready", []),
}


def deployment(state: str = "healthy", **status: Any) -> Deployment:
    raw = copy.deepcopy(load(state).one("Deployment", "kruise-controller-manager"))
    raw["status"].update(status)
    return parse(Deployment, raw, "fixture")


def test_every_captured_state_is_judged_here() -> None:
    assert sorted(CAPTURED) == sorted(STATES)


@each_state(CAPTURED)
def test_captured_states(state_name: str, status: Status, summary: str, errors: list[str]) -> None:
    state = load(state_name)
    params = KruiseManagerReplicasParams()
    with fake_cluster(FakeApiServer().add_all(state.objects)) as cluster:
        data = kruise_manager_replicas.fetch(cluster, params)
    result = kruise_manager_replicas.evaluate(data, params, state.captured_at)
    assert (result.status, result.summary, result.errors) == (status, summary, errors)


@pytest.mark.parametrize("state_name", ["scaled_to_zero_kruise", "manager_down_kruise"])
def test_the_captured_zero_is_an_omitted_ready_replicas(state_name: str) -> None:
    raw = load(state_name).one("Deployment", "kruise-controller-manager")
    assert "readyReplicas" not in raw["status"]  # the API's omitted zero, which the check reads as 0
    assert deployment(state_name).status.ready_replicas == 0


@pytest.mark.parametrize(
    ("data", "params", "status", "line"),
    [
        (
            deployment(readyReplicas=1),
            KruiseManagerReplicasParams(),
            Status.DEGRADED,
            f"{DEPLOYMENT}: observed 1/2 ready replicas (want 2)",
        ),
        (
            deployment(readyReplicas=1),
            KruiseManagerReplicasParams(min_ready=2),
            Status.FAILED,
            f"{DEPLOYMENT}: observed 1 ready replicas (want >= 2)",
        ),
        (deployment(readyReplicas=3), KruiseManagerReplicasParams(), Status.OK, None),  # surge during a rollout
        (
            None,
            KruiseManagerReplicasParams(),
            Status.FAILED,
            f"{DEPLOYMENT}: not found (want the manager Deployment with >= 1 ready replicas)",
        ),
    ],
)
def test_evaluate_edits_of_the_healthy_deployment(
    data: Deployment | None, params: KruiseManagerReplicasParams, status: Status, line: str | None
) -> None:
    result = kruise_manager_replicas.evaluate(KruiseManagerReplicasData(data), params, NOW)
    assert result.status is status
    assert result.errors == ([line] if line else [])


def test_fetch_reads_the_configured_deployment() -> None:
    api = FakeApiServer().add(load("healthy").one("Deployment", "kruise-controller-manager"))
    with fake_cluster(api) as cluster:
        found = kruise_manager_replicas.fetch(cluster, KruiseManagerReplicasParams())
        absent = kruise_manager_replicas.fetch(cluster, KruiseManagerReplicasParams(deployment="kruise-manager"))
    assert found.deployment is not None
    assert found.deployment.status.ready_replicas == 2
    assert absent.deployment is None


def test_a_malformed_count_is_an_error() -> None:
    raw = copy.deepcopy(load("healthy").one("Deployment", "kruise-controller-manager"))
    raw["spec"]["replicas"] = "two"  # not the API's integer: could not observe, never a count of 0
    api = FakeApiServer().add(raw)
    with fake_cluster(api) as cluster, pytest.raises(MalformedResponse, match=r"spec\.replicas"):
        kruise_manager_replicas.fetch(cluster, KruiseManagerReplicasParams())
