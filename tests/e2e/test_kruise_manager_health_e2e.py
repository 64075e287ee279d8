"""kruise-manager-health end to end: the real kruise-controller-manager pods (both replicas) through the real pod
proxy, as the probe.

Healthy → ok, each pod's `/readyz` answering 200 `ok` (the only path asked by default), exactly one ping. Asked
for `/healthz` too (kruise-manager registers no liveness check, so nothing serves it), every pod's `/healthz`
answers 404 and is named while `/readyz` passes: failed, exit status 1 from the CLI, no ping.
The manager down, frozen or scaled to 0 is the fault catalogue's (test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from check_runs import CheckRuns, assert_every_pod_ready, manager_pods

CHECK = "kruise-manager-health"
NS = "kruise-system"
SELECTOR = "control-plane=controller-manager"
REPLICAS = 2  # the kruise-controller-manager Deployment as the sandbox installs it


def test_healthy_is_ok_and_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK)
    assert_every_pod_ready(result, manager_pods(runs.sandbox, NS, SELECTOR), REPLICAS)


def test_asking_healthz_fails_every_pod_with_exit_1(runs: CheckRuns) -> None:
    pods = manager_pods(runs.sandbox, NS, SELECTOR)
    code, result = runs.cli(runs.config(CHECK, {"paths": ["/healthz", "/readyz"]}), CHECK)
    assert (code, result["status"]) == (1, "failed"), result
    assert [line.partition(": ")[0] for line in result["errors"]] == [f"pod {NS}/{pod} :8000/healthz" for pod in pods]
    assert all(": HTTP 404 " in line for line in result["errors"]), result["errors"]
    assert runs.receiver.pings_for(CHECK) == 0
