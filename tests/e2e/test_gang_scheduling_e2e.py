"""gang-scheduling end to end against the real koord-scheduler: the sandbox's gangs read with the probe's identity.
Healthy (be-gang Running) → ok and one ping; `podgroup-failed` (a member of a running gang fails; koord-scheduler
leaves its PodGroup's status as it was, so the check reads the members) and `podgroup-stuck` (members that cannot
be placed, unschedulable for an hour) → failed on the first run through the CLI (exit 1), the gang named, no ping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from workload_checks import local_config, run, run_cli

from outpost.result import Status
from outpost_sandbox import faults
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "gang-scheduling"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


def test_healthy_is_ok_and_pings_once(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(local_config(tmp_path, sandbox, [CHECK]), CHECK, receiver, monkeypatch)
    assert result.status is Status.OK, result
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1
    assert result.details["by_phase"].get("Running", 0) >= 1


@pytest.mark.parametrize(
    ("fault", "named"),
    [
        (
            "podgroup-failed",
            "podgroup default/outpost-fault-failed-gang: observed 1 failed member(s), 2 running + 0 "
            "succeeded of minMember 3",
        ),
        (
            "podgroup-stuck",
            "podgroup default/outpost-fault-pending-gang: observed 3 member(s) waiting to be "
            "scheduled longer than 600 s",
        ),
    ],
)
def test_fault_fails_on_the_first_run(
    fault: str, named: str, tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    config = local_config(tmp_path, sandbox, [CHECK])
    faults.break_fault(fault, state_dir=sandbox.state_dir)
    try:
        code, result = run_cli(config, CHECK, receiver)
    finally:
        faults.heal(fault, state_dir=sandbox.state_dir)
    assert (code, result["status"]) == (1, "failed"), result
    assert any(line.startswith(named) for line in result["errors"]), result["errors"]
    assert result["reported"] is False
    assert receiver.pings_for(CHECK) == 0
