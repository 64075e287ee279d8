"""kruise-manager-replicas over the captured Deployment: readyReplicas against the minimum, an omitted
readyReplicas (the API's zero) counting as 0, the Deployment absent named."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kit import FakeApiServer, fake_cluster
from kit.managers import load
from outpost.checks import kruise_manager_replicas
from outpost.checks.kruise_manager_replicas import KruiseManagerReplicasData, KruiseManagerReplicasParams
from outpost.errors import MalformedResponse
from outpost.kube import Deployment, parse
from outpost.result import Status

NOW = load("healthy").captured_at


def deployment(state: str = "healthy", **status: Any) -> Deployment:
    raw = copy.deepcopy(load(state).one("Deployment", "kruise-controller-manager"))
    raw["status"].update(status)
    return parse(Deployment, raw, "fixture")


@pytest.mark.parametrize(("data", "params", "status", "line"), [
    (deployment(), KruiseManagerReplicasParams(), Status.OK, None),
    (deployment("scaled_to_zero_kruise"), KruiseManagerReplicasParams(), Status.FAILED,
     "deployment kruise-system/kruise-controller-manager: observed 0 ready replicas, spec.replicas 0 (want >= 1)"),
    (deployment(readyReplicas=1), KruiseManagerReplicasParams(), Status.DEGRADED,
     "deployment kruise-system/kruise-controller-manager: observed 1/2 ready replicas (want 2)"),
    (deployment(readyReplicas=1), KruiseManagerReplicasParams(min_ready=2), Status.FAILED,
     "deployment kruise-system/kruise-controller-manager: observed 1 ready replicas (want >= 2)"),
    (deployment(readyReplicas=3), KruiseManagerReplicasParams(), Status.OK, None),  # surge during a rollout
    (None, KruiseManagerReplicasParams(), Status.FAILED,
     "deployment kruise-system/kruise-controller-manager: not found (want the manager Deployment with >= 1 ready "
     "replicas)"),
])
def test_evaluate(data: Deployment | None, params: KruiseManagerReplicasParams, status: Status,
                  line: str | None) -> None:
    result = kruise_manager_replicas.evaluate(KruiseManagerReplicasData(data), params, NOW)
    assert result.status is status
    assert result.errors == ([line] if line else [])


def test_the_captured_scale_to_zero_omits_ready_replicas() -> None:
    raw = load("scaled_to_zero_kruise").one("Deployment", "kruise-controller-manager")
    assert "readyReplicas" not in raw["status"]  # the API's omitted zero, which the check reads as 0


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
