"""be-eviction-rate end to end: evictPodSuccess Events on the sandbox's BE pods (deployment default/be-batch,
scheduled by koord-scheduler), read with the probe's identity.

Healthy → ok and exactly one ping. Read through events.k8s.io/v1 instead of core/v1 (`api`, with the RBAC
generated for it), `be-evictions` (10 Events) → failed on the first run, exit status 1 from the CLI, the evicted
pods named, grouped by reason, no ping. Through core/v1 (local.yaml's) that fault is the fault catalogue's
(test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from check_runs import CheckRuns, broken
from generated_rbac import probe_granted_for

CHECK = "be-eviction-rate"


def test_healthy_is_ok_and_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, config=runs.local(CHECK))
    assert result.details["evictions"] == 0


def test_evictions_read_through_events_k8s_io_fail_on_the_first_run(runs: CheckRuns) -> None:
    config = runs.local(CHECK, {"api": "events.k8s.io/v1"})
    # events.k8s.io is read only by an environment that says so: the RBAC generated for it, for the run
    with broken("be-evictions", runs.sandbox.state_dir), probe_granted_for(runs.sandbox, config):
        code, result = runs.cli(config, CHECK)
    assert (code, result["status"]) == (1, "failed"), result
    assert result["summary"].startswith("BE pods: observed 10 evictPodSuccess in the last 30 min (want at most 5)")
    assert result["details"]["by_reason"] == {"cpu": 10}
    assert any(
        line.startswith("pod default/be-batch-") and "evictPodByBECPUSatisfaction" in line for line in result["errors"]
    ), result["errors"]
    assert result["reported"] is False
    assert runs.receiver.pings_for(CHECK) == 0
