"""leader-leases end to end: the four leader Leases renewed by the real managers (kruise-manager, koord-manager,
koord-scheduler, koord-descheduler), as the probe.

Healthy → ok and one ping, each Lease's holder reported as the running manager pod that holds it (the process
node's pod whose name is the hostname in `<hostname>_<uuid>`), renewed with upstream's 15 s duration. A
`max_lease_duration_seconds` below 15 s fails every Lease on its own, naming holder and duration: the bound that
catches a stolen Lease. The theft itself, the managers down, frozen or scaled to 0 are the fault catalogue's
(test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from check_runs import CheckRuns, wait_leases_settled

from outpost.result import Status
from outpost_sandbox import systems
from outpost_sandbox.kubelet.daemon import NODE_NAME

if TYPE_CHECKING:
    from conftest import SandboxInfo

CHECK = "leader-leases"
LEASES = {f"{ns}/{lease}": selector for ns, selector, lease in systems.MANAGERS.values()}
UPSTREAM_DURATION = 15


@pytest.fixture
def settled(sandbox: SandboxInfo) -> None:
    wait_leases_settled(sandbox)  # a manager restarted by an earlier test takes its Lease back a moment later


def running_pods(sandbox: SandboxInfo, namespace: str, selector: str) -> dict[str, str]:
    """Running pod name -> node, as admin."""
    pods = json.loads(sandbox.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json").stdout)
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName", "")
        for p in pods["items"]
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    }


@pytest.mark.usefixtures("settled")
def test_healthy_reports_the_real_holder_pods_and_pings_once(runs: CheckRuns, sandbox: SandboxInfo) -> None:
    result = runs.healthy(CHECK)
    assert sorted(result.details["leases"]) == sorted(LEASES)
    for key, selector in LEASES.items():
        lease = result.details["leases"][key]
        holder_pod = lease["holder_pod"]
        assert lease["holder"].rpartition("_")[0] == holder_pod, key
        assert holder_pod in lease["candidates"], key
        assert running_pods(sandbox, key.partition("/")[0], selector).get(holder_pod) == NODE_NAME, key
        assert lease["lease_duration_seconds"] == UPSTREAM_DURATION, key


@pytest.mark.usefixtures("settled")
def test_a_lease_longer_than_the_bound_fails_naming_holder_and_duration(runs: CheckRuns) -> None:
    bound = UPSTREAM_DURATION - 5
    result = runs.probe(CHECK, {"max_lease_duration_seconds": bound})
    assert result.status is Status.FAILED, result.summary
    holders = {key: lease["holder"] for key, lease in result.details["leases"].items()}
    assert sorted(line.partition(": ")[0] for line in result.errors) == sorted(f"lease {key}" for key in LEASES)
    for key, holder in holders.items():
        (line,) = [line for line in result.errors if line.startswith(f"lease {key}: ")]
        assert line.startswith(
            f"lease {key}: observed leaseDurationSeconds {UPSTREAM_DURATION} held by {holder} "
            f"(want <= {bound} s: nobody would take over for {UPSTREAM_DURATION} s"
        )
    assert runs.receiver.pings_for(CHECK) == 0
