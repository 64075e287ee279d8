"""gang-scheduling end to end against the real koord-scheduler: the sandbox's gangs read with the probe's identity.
Healthy (be-gang Running) → ok and one ping; `podgroup-failed` (a member of a running gang fails; koord-scheduler
leaves its PodGroup's status as it was, so the check reads the members) and `podgroup-stuck` (members that cannot
be placed, unschedulable for an hour) → failed on the first run through the CLI (exit 1), the gang named, no ping.

An elastic gang declared by pod annotation (min-available 2, total-number 4, waiting-time 30s, match policy
once-satisfied by default): two members bound, two spares that fit nowhere → ok, the spares beyond the quorum
(koord-scheduler places them one by one: pkg/scheduler/plugins/coscheduling/core/core.go PreEnqueue, PreFilter at
github.com/koordinator-sh/koordinator@v1.6.0); one bound member deleted → failed past the gang's own 30 s, the gang
named with 1 bound."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from check_runs import CheckRuns, broken

from outpost.kube.paths import PODS, collection_path, object_path
from outpost_sandbox import systems
from outpost_sandbox.backends.kube import Kube
from outpost_sandbox.poll import poll_until

if TYPE_CHECKING:
    from conftest import SandboxInfo

CHECK = "gang-scheduling"
ELASTIC = "outpost-e2e-elastic-gang"
ELASTIC_WAIT_S = 30
"""The gang's own waiting-time, shorter than koord's 600 s default: the check honours it (core/gang.go)."""


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


def _elastic_member(index: int, *, fits: bool) -> dict[str, Any]:
    """A member of the elastic gang: the spares (fits=False) ask for a node that does not exist."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{ELASTIC}-{index}",
            "namespace": "default",
            "labels": {"app": ELASTIC},
            "annotations": {
                "gang.scheduling.koordinator.sh/name": ELASTIC,
                "gang.scheduling.koordinator.sh/min-available": "2",
                "gang.scheduling.koordinator.sh/total-number": "4",
                "gang.scheduling.koordinator.sh/waiting-time": f"{ELASTIC_WAIT_S}s",
            },
        },
        "spec": {
            "schedulerName": "koord-scheduler",
            "restartPolicy": "Never",
            "tolerations": [{"key": "kwok-controller/provider", "operator": "Exists"}],
            "nodeSelector": {"type": "kwok"} if fits else {"outpost.sandbox/no-such-node": "true"},
            "containers": [
                {
                    "name": "w",
                    "image": "library/busybox:1.36",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
    }


def _members(kube: Kube) -> list[dict[str, Any]]:
    return list(kube.get(collection_path(PODS, "default"), labelSelector=f"app={ELASTIC}")["items"])


def _unschedulable_for(pod: dict[str, Any], seconds: float) -> bool:
    """PodScheduled=False, Unschedulable, since more than `seconds` ago (the member's wait, as the check reads it)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            since = datetime.fromisoformat(condition["lastTransitionTime"])
            return (datetime.now(UTC) - since).total_seconds() > seconds
    return False


@pytest.fixture
def elastic_gang(sandbox: SandboxInfo) -> Iterator[Kube]:
    """Two members bound, then two spares that fit nowhere, unschedulable past the gang's waiting-time; removed
    after the test."""
    with Kube.from_kubeconfig(sandbox.kubeconfig) as kube:
        try:
            for index in (0, 1):
                kube.apply(_elastic_member(index, fits=True))
            last = time.monotonic()

            def bound() -> bool:
                nonlocal last
                if all((p.get("spec") or {}).get("nodeName") for p in _members(kube)):
                    return True
                # A gang declared by annotation has no PodGroup whose update would requeue a member held as
                # "gang child pod not collect enough"; any PodGroup's does (Coscheduling EventsToRegister).
                if time.monotonic() - last >= systems.GANG_REQUEUE_S:
                    last = time.monotonic()
                    systems.requeue_gang(kube, "default", systems.GANGS[("default", "be-batch")])
                return False

            poll_until(f"koord-scheduler to bind both members of {ELASTIC}", 90, bound)
            for index in (2, 3):
                kube.apply(_elastic_member(index, fits=False))
            poll_until(
                f"the spares of {ELASTIC} unschedulable for more than {ELASTIC_WAIT_S} s",
                ELASTIC_WAIT_S + 60,
                lambda: sum(_unschedulable_for(p, ELASTIC_WAIT_S + 5) for p in _members(kube)) == 2,
            )
            yield kube
        finally:
            for pod in _members(kube):
                kube.delete(object_path(PODS, pod["metadata"]["name"], "default"), {"gracePeriodSeconds": "0"})
            poll_until(f"the members of {ELASTIC} gone", 60, lambda: not _members(kube))


def test_an_elastic_gang_whose_spares_wait_for_capacity_is_ok(elastic_gang: Kube, runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, config=runs.local(CHECK))
    assert any(
        line.startswith(
            f"gang default/{ELASTIC}: 2 member(s) wait beyond the quorum (2 bound of minMember 2; declared by pod "
            "annotation, total-number 4)"
        )
        for line in result.details["beyond_quorum"]
    ), result.details["beyond_quorum"]
    assert "default" in result.details["quorum_counted_in"]


def test_an_elastic_gang_below_min_available_fails_past_its_own_wait_time(elastic_gang: Kube, runs: CheckRuns) -> None:
    elastic_gang.delete(object_path(PODS, f"{ELASTIC}-1", "default"), {"gracePeriodSeconds": "0"})
    poll_until(f"{ELASTIC}-1 gone", 60, lambda: len(_members(elastic_gang)) == 3)
    code, result = runs.cli(runs.local(CHECK), CHECK)
    assert (code, result["status"]) == (1, "failed"), result
    named = (
        f"gang default/{ELASTIC}: observed 2 member(s) waiting to be scheduled longer than {ELASTIC_WAIT_S} s "
        "(want minMember 2 scheduled within it, 1 bound; declared by pod annotation, total-number 4)"
    )
    assert any(line.startswith(named) for line in result["errors"]), result["errors"]
    assert result["reported"] is False
    assert runs.receiver.pings_for(CHECK) == 0
