"""What koord-manager-health and kruise-manager-health, both built by `outpost.families.manager_pods.make_check`,
are tested for alike, over the managers' captures (`kit.managers`); what is one check's own stays in its module."""

from __future__ import annotations

from typing import Any

import pytest

from kit import FakeApiServer, fake_cluster
from kit.managers import load, serve
from outpost.check import CheckSpec
from outpost.checks import koord_manager_health, kruise_manager_health
from outpost.checks.koord_manager_health import KoordManagerHealthParams
from outpost.checks.kruise_manager_health import KruiseManagerHealthParams
from outpost.families.manager_pods import ManagerPodsData, ManagerPodsParams
from outpost.result import Status


@pytest.mark.parametrize(
    ("check", "params", "state", "deployment"),
    [
        # The tutorial's name, while the real manager runs as koord-manager beside it.
        pytest.param(
            koord_manager_health.CHECK,
            KoordManagerHealthParams(deployment="koordinator-manager"),
            "healthy",
            "deployment koordinator-system/koordinator-manager",
            id="koord-manager-asked-for-by-the-tutorials-name",
        ),
        # A cluster set up the tutorial's way has no such Deployment (nor any other object).
        pytest.param(
            kruise_manager_health.CHECK,
            KruiseManagerHealthParams(),
            None,
            "deployment kruise-system/kruise-controller-manager",
            id="kruise-manager-in-a-cluster-without-it",
        ),
    ],
)
def test_the_deployment_absent_is_failed_naming_it(
    check: CheckSpec[Any, ManagerPodsData], params: ManagerPodsParams, state: str | None, deployment: str
) -> None:
    api = serve(load(state)) if state else FakeApiServer()
    with fake_cluster(api) as cluster:
        data = check.fetch(cluster, params)
    result = check.evaluate(data, params, load("healthy").captured_at)
    assert (result.status, result.errors) == (Status.FAILED, [f"{deployment}: not found (want the manager Deployment)"])
    assert [(step.failure, step.command) for step in result.next_steps] == [
        ("deployment-missing", f"kubectl -n {params.namespace} get deployments,pods -o wide")
    ]
