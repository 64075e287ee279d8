"""kruise-manager-replicas end to end: the real kruise-controller-manager Deployment, as the probe.

Healthy = ok (2/2 ready) and one ping. A `min_ready` above the Deployment's replicas = failed, naming it with
its ready and desired counts, no ping; a Deployment of another name (a cluster set up another way) = failed,
naming it, never taken as healthy. The Deployment scaled to 0 is the fault catalogue's
(test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from check_runs import CheckRuns
from generated_rbac import probe_granted_for

from outpost.result import Status

if TYPE_CHECKING:
    from conftest import SandboxInfo

CHECK = "kruise-manager-replicas"


def test_healthy_is_ok_and_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK)
    assert result.summary == "deployment kruise-system/kruise-controller-manager: 2/2 replicas ready"


def test_fewer_ready_than_min_ready_fails_naming_the_deployment(runs: CheckRuns) -> None:
    result = runs.probe(CHECK, {"min_ready": 3})
    assert result.status is Status.FAILED
    assert result.errors == [
        "deployment kruise-system/kruise-controller-manager: observed 2 ready replicas, spec.replicas 2 (want >= 3)"
    ]
    runs.assert_silent(result, CHECK)


def test_the_deployment_absent_is_failed_naming_it(runs: CheckRuns, sandbox: SandboxInfo) -> None:
    config = runs.config(CHECK, {"deployment": "kruise-manager"})
    with probe_granted_for(sandbox, config):  # an environment configured so: `get` on that name, 404 here
        result = runs.run(config, CHECK)
    assert result.status is Status.FAILED
    assert result.errors[0].startswith("deployment kruise-system/kruise-manager: not found")
    assert runs.receiver.pings_for(CHECK) == 0
