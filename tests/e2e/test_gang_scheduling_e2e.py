"""gang-scheduling end to end against the real koord-scheduler: the sandbox's gangs read with the probe's identity.
Healthy (be-gang Running) → ok and one ping; `podgroup-failed` (a member of a running gang fails; koord-scheduler
leaves its PodGroup's status as it was, so the check reads the members) and `podgroup-stuck` (members that cannot
be placed, unschedulable for an hour) → failed on the first run through the CLI (exit 1), the gang named, no ping."""

from __future__ import annotations

import pytest
from check_runs import CheckRuns, broken

CHECK = "gang-scheduling"


def test_healthy_is_ok_and_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, config=runs.local(CHECK))
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
def test_fault_fails_on_the_first_run(fault: str, named: str, runs: CheckRuns) -> None:
    config = runs.local(CHECK)
    with broken(fault, runs.sandbox.state_dir):
        code, result = runs.cli(config, CHECK)
    assert (code, result["status"]) == (1, "failed"), result
    assert any(line.startswith(named) for line in result["errors"]), result["errors"]
    assert result["reported"] is False
    assert runs.receiver.pings_for(CHECK) == 0
