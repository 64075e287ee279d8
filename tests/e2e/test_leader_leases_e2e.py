"""leader-leases end to end: the sandbox's four leader Leases (renewed by its backend daemon on behalf of the
manager pods), as the probe.

Healthy = ok and one ping. `leader-lease-stale` on each Lease = failed on the first run after `break`, naming
that Lease and its last holder. `manager-scaled-to-zero` on each manager = failed on the first run after
`break`, although the Lease is then only seconds old: no pod is left to renew it (its last holder named).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from managers_e2e import broken, heartbeat_env, run_once, wait_leases_settled, write_config

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "leader-leases"
NAMESPACES = {"koordinator-manager": "koordinator-system", "koord-scheduler": "koordinator-system",
              "koord-descheduler": "koordinator-system", "kruise-manager": "kruise-system"}


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def config(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(heartbeat_env(CHECK), receiver.url_for(CHECK))
    wait_leases_settled(sandbox)  # an earlier test's healed scale-to-zero leaves a failover to finish
    return write_config(tmp_path, sandbox, CHECK)


def test_healthy_is_ok_and_pings_once(config: Path, receiver: HeartbeatReceiver) -> None:
    result = run_once(config, CHECK)
    assert result.status is Status.OK, result.errors
    assert sorted(result.details["leases"]) == sorted(f"{ns}/{name}" for name, ns in NAMESPACES.items())
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1


@pytest.mark.parametrize("lease", sorted(NAMESPACES))
def test_stale_lease_fails_naming_it_and_its_last_holder(lease: str, config: Path, sandbox: SandboxInfo,
                                                        receiver: HeartbeatReceiver) -> None:
    with broken(sandbox, "leader-lease-stale", lease, CHECK):
        result = run_once(config, CHECK)
    assert result.status is Status.FAILED
    (line,) = result.errors
    holder = result.details["leases"][f"{NAMESPACES[lease]}/{lease}"]["holder"]
    assert holder
    assert line.startswith(f"lease {NAMESPACES[lease]}/{lease}: observed renewTime ")
    assert line.endswith(f"(want within 15 s + 10 s slack); last holder {holder}")
    assert receiver.pings_for(CHECK) == 0


@pytest.mark.parametrize(("manager", "lease", "selector"), [
    ("koord-manager", "koordinator-manager", "koord-app=koord-manager"),
    ("kruise-controller-manager", "kruise-manager", "control-plane=controller-manager"),
])
def test_manager_scaled_to_zero_fails_at_once(manager: str, lease: str, selector: str, config: Path,
                                             sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    with broken(sandbox, "manager-scaled-to-zero", manager, CHECK):
        result = run_once(config, CHECK)
    assert result.status is Status.FAILED
    (line,) = result.errors
    ns = NAMESPACES[lease]
    assert line.startswith(f"lease {ns}/{lease}: no running pod matches {selector} in {ns}, nobody can renew it "
                           f"(last holder {manager}-")
    assert receiver.pings_for(CHECK) == 0
