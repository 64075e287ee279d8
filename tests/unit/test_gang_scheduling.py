"""gang-scheduling over PodGroups and member pods (Pending, Running, Failed) shaped as koord-scheduler v1.6.0 and the
kubelet write them (built from the Go types: tests/unit/fixtures/gang_scheduling/koord_objects.json says how, and
which case was measured against the real koord-scheduler), one table row per rule, plus the objects captured from
the sandbox's stand-in (no koord-scheduler ran there) and the fetch over the kit's API server."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kit import FakeApiServer, fake_cluster
from outpost.checks import gang_scheduling
from outpost.checks.gang_scheduling import (
    SETTLED_PHASES,
    UNSETTLED_PHASES,
    GangSchedulingData,
    GangSchedulingParams,
    go_duration_seconds,
    recently_failed_namespaces,
)
from outpost.errors import ClusterError, MalformedResponse
from outpost.kube import PodGroup, parse_items, parse_time
from outpost.kube.objects import PodSchedulingOutline
from outpost.result import Status

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gang_scheduling" / "koord_objects.json"
CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox" / "workload-checks"
DOC: dict[str, Any] = json.loads(FIXTURES.read_text())
NOW = datetime.fromisoformat(DOC["now"])
PARAMS = GangSchedulingParams()
PG_PATH = "/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups"
PODS_PATH = "/api/v1/pods"


def groups(*names: str) -> list[dict[str, Any]]:
    return [copy.deepcopy(DOC["podgroups"][name]) for name in names]


def pods(*names: str) -> list[dict[str, Any]]:
    return [copy.deepcopy(DOC["pods"][name]) for name in names]


def members(*gangs: str) -> list[dict[str, Any]]:
    """Every fixture pod named `<gang>-<n>`."""
    return pods(*(name for name in DOC["pods"] if any(name.rsplit("-", 1)[0] == gang for gang in gangs)))


def judge(
    raw_groups: list[dict[str, Any]],
    raw_pods: list[dict[str, Any]],
    params: GangSchedulingParams = PARAMS,
    now: datetime = NOW,
    fetched_at: datetime | None = None,
) -> Any:
    """evaluate over what fetch would have read at `fetched_at` (default `now`): the pods neither Running nor
    Succeeded, and the Running and Succeeded ones of each namespace holding a recent failed member."""
    pod_groups = parse_items(PodGroup, raw_groups, "test")
    every_pod = parse_items(PodSchedulingOutline, raw_pods, "test")
    unsettled = [pod for pod in every_pod if pod.status.phase not in ("Running", "Succeeded")]
    listed = {(group.namespace, group.name) for group in pod_groups}
    settled = {
        namespace: [
            pod for pod in every_pod if pod.namespace == namespace and pod.status.phase in ("Running", "Succeeded")
        ]
        for namespace in recently_failed_namespaces(unsettled, listed, params, fetched_at or now)
    }
    data = GangSchedulingData(PG_PATH, pod_groups, PODS_PATH, unsettled, settled)
    return gang_scheduling.evaluate(data, params, now)


def with_status(name: str, status: dict[str, Any]) -> list[dict[str, Any]]:
    """The fixture PodGroup `name` with another status (as koord-scheduler rewrites it)."""
    raw = groups(name)
    raw[0]["status"] = status
    return raw


def labelled(raw: list[dict[str, Any]], labels: dict[str, str]) -> list[dict[str, Any]]:
    """`raw` PodGroups carrying `labels` (what a label selector lists)."""
    for group in raw:
        group["metadata"].setdefault("labels", {}).update(labels)
    return raw


def changed(raw: list[dict[str, Any]], name: str, change: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """`raw` with the pod `name` changed in place by `change`."""
    for pod in raw:
        if pod["metadata"]["name"] == name:
            change(pod)
    return raw


def succeeded(pod: dict[str, Any]) -> None:
    """A running member that ended with exit code 0, as the kubelet writes it."""
    status = pod["status"]
    status["phase"] = "Succeeded"
    started = status["containerStatuses"][0]["state"]["running"]["startedAt"]
    status["containerStatuses"][0].update(
        ready=False,
        started=False,
        state={
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": started,
                "finishedAt": "2026-12-03T13:33:00Z",
            }
        },
    )


def untimed(pod: dict[str, Any]) -> None:
    pod["status"]["containerStatuses"][0]["state"]["terminated"].pop("finishedAt")


def deleting(pod: dict[str, Any]) -> None:
    pod["metadata"]["deletionTimestamp"] = "2026-12-03T13:35:00Z"
    pod["metadata"]["deletionGracePeriodSeconds"] = 30


def other_scheduler(pod: dict[str, Any]) -> None:
    pod["spec"]["schedulerName"] = "default-scheduler"


def captured(state: str) -> list[dict[str, Any]]:
    doc: dict[str, Any] = json.loads((CAPTURED / f"podgroups.{state}.json").read_text())
    return list(doc["items"])


INCOMPLETE = GangSchedulingParams(fail_incomplete=True)
ANY_SCHEDULER = GangSchedulingParams(scheduler_names=[])


@pytest.mark.parametrize(
    ("raw_groups", "raw_pods", "params", "status", "named", "summary", "details"),
    [
        # -- PodGroups koord keeps current ---------------------------------------------------------------
        pytest.param(
            groups("train-running"),
            [],
            PARAMS,
            Status.OK,
            None,
            "1 PodGroup(s) and 0 gang(s) without one: none stuck past 600 s",
            {"by_phase": {"Running": 1}},
            id="running",
        ),
        pytest.param(
            groups("train-running"),
            pods("train-running-3"),
            PARAMS,
            Status.OK,
            None,
            "none stuck",
            {
                "members_waiting": 1,
                "beyond_quorum": [
                    "podgroup batch/train-running: 1 member(s) wait beyond the quorum (phase Running, 3 "
                    "scheduled, 3 running, 0 succeeded, 0 failed of minMember 3): pod train-running-3 "
                    "PodScheduled=False (Unschedulable) for 3919 s: 0/10 nodes are available: 10 Insufficient "
                    "cpu. preemption: 0/10 nodes are available: 10 Preemption is not helpful for "
                    "scheduling.."
                ],
            },
            id="running-with-an-extra-member-that-fits-nowhere",
        ),
        pytest.param(
            groups("train-stuck"),
            members("train-stuck"),
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-stuck: observed 4 member(s) waiting to be scheduled longer than 600 s "
            "(want minMember 3 scheduled within it; phase Scheduling, 0 scheduled, 0 running, 0 succeeded, "
            "0 failed of minMember 3): pod train-stuck-0 PodScheduled=False (Unschedulable) for 3919 s: "
            "0/10 nodes are available: 10 node(s) didn't match Pod's node affinity/selector. Gang "
            '"batch/train-stuck" gets rejected due to pod is unschedulable, preemptio...; pod train-stuck-1 '
            "PodScheduled=False (Unschedulable) for 3919 s: 0/10 nodes are available: gang scheduleCycle not "
            "valid, gangName: batch/train-stuck, podName: batch/train-stuck-1. preemption: 0/10 nodes are "
            "available: 10 P...; +2 more",
            "1 gang(s) stuck waiting of 1 PodGroup(s) and 0 gang(s) without one",
            {"stuck": 1, "members_waiting": 4},
            id="stuck-members-ask-for-a-node-that-does-not-exist",
        ),
        pytest.param(
            groups("train-young"),
            members("train-young"),
            PARAMS,
            Status.OK,
            None,
            "none stuck",
            {},
            id="waiting-less-than-the-bound",
        ),
        pytest.param(
            groups("train-patient"),
            members("train-patient"),
            PARAMS,
            Status.OK,
            None,
            "none stuck",
            {},
            id="within-its-own-longer-scheduleTimeoutSeconds",
        ),
        pytest.param(
            groups("train-unsynced"),
            members("train-unsynced"),
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-unsynced: observed 2 member(s) waiting to be scheduled longer than 600 s "
            "(want minMember 2 scheduled within it; phase (unset), 0 scheduled",
            "1 gang(s) stuck",
            {"by_phase": {"(unset)": 1}},
            id="whole-gang-waits-and-no-phase-ever-written",
        ),
        pytest.param(
            groups("train-partial"),
            members("train-partial"),
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-partial: observed 1 member(s) waiting to be scheduled longer than 600 s "
            "(want minMember 3 scheduled within it; phase Scheduling, 2 scheduled, 2 running",
            "1 gang(s) stuck",
            {},
            id="scheduling-the-last-missing-member-waits",
        ),
        pytest.param(
            groups("train-recreated"),
            members("train-recreated"),
            PARAMS,
            Status.OK,
            None,
            "none stuck",
            {},
            id="old-scheduleStartTime-is-no-wait-a-member-recreated-just-now",
        ),
        # -- Pending: fewer pods than minMember exist --------------------------------------------------
        pytest.param(
            groups("train-deleted"),
            [],
            PARAMS,
            Status.OK,
            None,
            "(1 Pending without members: see details)",
            {"pending_without_members": ["podgroup batch/train-deleted"]},
            id="workload-deleted-reset-to-Pending-with-old-counters",
        ),
        pytest.param(
            groups("train-short"),
            members("train-short"),
            PARAMS,
            Status.OK,
            None,
            "1 incomplete",
            {
                "incomplete": [
                    "podgroup batch/train-short: observed 2 member(s) waiting, fewer than the 4 minMember still "
                    "needs, held by koord-scheduler until the workload creates the rest (phase Pending, 0 "
                    "scheduled, 0 running, 0 succeeded, 0 failed of minMember 4): pod train-short-0 "
                    "PodScheduled=False (Unschedulable) for 2119 s: 0/10 nodes are available: gang child pod not "
                    "collect enough, gangName: batch/train-short, podName: batch/train-short-0. preemption: 0/10 "
                    "nodes are available:...; pod train-short-1 PodScheduled=False (Unschedulable) for 2119 s: "
                    "0/10 nodes are available: gang child pod not collect enough, gangName: batch/train-short, "
                    "podName: batch/train-short-1. preemption: 0/10 nodes are available:..."
                ]
            },
            id="incomplete-held-by-PreFilter-helm-chart",
        ),
        pytest.param(
            groups("train-short-quiet"),
            members("train-short-quiet"),
            PARAMS,
            Status.OK,
            None,
            "1 incomplete",
            {},
            id="incomplete-held-by-PreEnqueue-kustomize-no-condition",
        ),
        pytest.param(
            groups("train-short"),
            members("train-short"),
            INCOMPLETE,
            Status.FAILED,
            "podgroup batch/train-short: observed 2 member(s) waiting, fewer than the 4 minMember",
            "1 incomplete gang(s) waiting",
            {},
            id="incomplete-fails-when-asked",
        ),
        # -- Failed: frozen by koord, judged by when and by its counters ---------------------------------
        pytest.param(
            groups("train-crashed"),
            [],
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-crashed: observed phase Failed 920 s ago (1 failed, 2 running, 0 succeeded "
            "of minMember 3) (want running + succeeded >= minMember)",
            "1 gang(s) failed below minMember of 1 PodGroup(s)",
            {"failed": 1},
            id="failed-now",
        ),
        pytest.param(
            groups("train-spare-crashed"),
            [],
            PARAMS,
            Status.DEGRADED,
            "podgroup batch/train-spare-crashed: observed phase Failed 920 s ago (1 failed, 2 running, 0 "
            "succeeded of minMember 2): minMember still met, a member beyond it failed",
            "worth reading",
            {},
            id="failed-but-the-quorum-still-runs",
        ),
        pytest.param(
            groups("train-old-crash"),
            [],
            PARAMS,
            Status.OK,
            None,
            "1 stale Failed",
            {
                "stale_failed": [
                    "podgroup batch/train-old-crash: phase Failed 181987 s ago (1 failed, 2 "
                    "running, 0 succeeded of minMember 3); koord-scheduler never revisits a Failed "
                    "PodGroup"
                ]
            },
            id="failed-two-days-ago-is-stale",
        ),
        pytest.param(
            groups("train-crash-untimed"),
            [],
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-crash-untimed: observed phase Failed at an unrecorded time (2 failed, 1 running",
            "1 gang(s) failed",
            {},
            id="failed-at-an-unrecorded-time-counts-as-now",
        ),
        # -- a member failed: judged from the pods, whatever koord's stale status says ----------------------
        pytest.param(
            groups("train-lost"),
            members("train-lost"),
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-lost: observed 1 failed member(s), 2 running + 0 succeeded of minMember 3 "
            "(want running + succeeded >= minMember; phase Running, 3 scheduled, 3 running, 0 succeeded, 0 "
            "failed of minMember 3): pod train-lost-2 failed 40 s ago (container worker exited 1, Error)",
            "1 gang(s) failed below minMember of 1 PodGroup(s) and 0 gang(s) without one",
            {
                "failed": 1,
                "failed_pods": 1,
                "members_failed": 1,
                "pending_pods": 0,
                "quorum_counted_in": ["batch"],
                "by_phase": {"Running": 1},
            },
            id="measured-koord-left-Running-3-of-3-after-a-member-failed",
        ),
        pytest.param(
            with_status(
                "train-lost",
                {"phase": "Scheduling", "scheduled": 2, "running": 2, "scheduleStartTime": "2026-12-03T13:20:01Z"},
            ),
            members("train-lost"),
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-lost: observed 1 failed member(s), 2 running + 0 succeeded of minMember 3 "
            "(want running + succeeded >= minMember; phase Scheduling, 2 scheduled, 2 running",
            "1 gang(s) failed below minMember",
            {"stuck": 0},
            id="measured-after-koord-restarted-Scheduling-2-of-3-never-Failed",
        ),
        pytest.param(
            groups("train-lost"),
            changed(members("train-lost"), "train-lost-2", untimed),
            PARAMS,
            Status.FAILED,
            "pod train-lost-2 failed at an unrecorded time (container worker exited 1, Error)",
            "1 gang(s) failed",
            {},
            id="member-failed-at-an-unrecorded-time-counts-as-now",
        ),
        pytest.param(
            groups("train-lost"),
            pods("train-lost-2"),
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-lost: observed 1 failed member(s), 0 running + 0 succeeded of minMember 3",
            "1 gang(s) failed",
            {"quorum_counted_in": ["batch"]},
            id="member-failed-and-the-rest-are-gone",
        ),
        pytest.param(
            groups("train-lost"),
            changed(changed(members("train-lost"), "train-lost-0", succeeded), "train-lost-1", succeeded),
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-lost: observed 1 failed member(s), 0 running + 2 succeeded of minMember 3",
            "1 gang(s) failed",
            {},
            id="succeeded-members-count-but-not-enough",
        ),
        pytest.param(
            groups("train-spare-lost"),
            members("train-spare-lost"),
            PARAMS,
            Status.DEGRADED,
            "podgroup batch/train-spare-lost: observed 1 failed member(s), 2 running + 0 succeeded of "
            "minMember 2: minMember still met; phase Running, 3 scheduled, 3 running, 0 succeeded, 0 failed "
            "of minMember 2: pod train-spare-lost-0 failed 320 s ago (container worker exited 1, Error)",
            "1 of 1 PodGroup(s) and 0 gang(s) without one worth reading",
            {"failed": 0},
            id="member-failed-beyond-the-quorum",
        ),
        pytest.param(
            groups("train-spare-lost"),
            changed(members("train-spare-lost"), "train-spare-lost-1", succeeded),
            PARAMS,
            Status.DEGRADED,
            "observed 1 failed member(s), 1 running + 1 succeeded of minMember 2: minMember still met",
            "worth reading",
            {},
            id="running-and-succeeded-together-meet-minMember",
        ),
        pytest.param(
            groups("train-spare-lost"),
            changed(members("train-spare-lost"), "train-spare-lost-1", deleting),
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-spare-lost: observed 1 failed member(s), 1 running + 0 succeeded of minMember 2",
            "1 gang(s) failed",
            {},
            id="a-running-member-being-deleted-does-not-count",
        ),
        pytest.param(
            groups("train-lost-long-ago"),
            members("train-lost-long-ago"),
            PARAMS,
            Status.OK,
            None,
            "1 stale Failed",
            {
                "stale_failed": [
                    "podgroup batch/train-lost-long-ago: 1 member(s) failed more than 3600 s ago: "
                    "pod train-lost-long-ago-1 failed 181990 s ago (container worker exited 137, "
                    "OOMKilled)"
                ],
                "quorum_counted_in": [],
                "members_failed": 1,
            },
            id="member-failed-two-days-ago-is-stale-and-costs-no-read",
        ),
        pytest.param(
            [],
            members("ann-lost"),
            PARAMS,
            Status.FAILED,
            "gang batch/ann-lost: observed 1 failed member(s), 1 running + 0 succeeded of minMember 2 (want "
            "running + succeeded >= minMember; declared by pod annotation): pod ann-lost-0 failed 589 s ago "
            "(Evicted: The node was low on resource: memory.",
            "1 gang(s) failed below minMember of 0 PodGroup(s) and 1 gang(s) without one",
            {"gangs_without_pod_group": 1},
            id="annotation-gang-member-evicted",
        ),
        pytest.param(
            groups("train-lost"),
            changed(members("train-lost"), "train-lost-2", other_scheduler),
            PARAMS,
            Status.OK,
            None,
            "none failed below minMember in the last 3600 s",
            {"other_scheduler_pods": 1, "quorum_counted_in": []},
            id="failed-pod-of-another-scheduler-is-not-judged",
        ),
        pytest.param(
            labelled(groups("train-lost"), {"team": "ml"}),
            members("train-lost"),
            GangSchedulingParams(label_selector="team=ml"),
            Status.FAILED,
            "podgroup batch/train-lost: observed 1 failed member(s)",
            "1 gang(s) failed",
            {},
            id="failed-member-of-a-listed-PodGroup-under-a-label-selector",
        ),
        pytest.param(
            [],
            members("train-lost"),
            GangSchedulingParams(label_selector="team=ml"),
            Status.OK,
            None,
            "none failed",
            {"not_attributed_pods": 1, "quorum_counted_in": []},
            id="failed-member-of-an-unlisted-PodGroup-is-not-judged-nor-counted",
        ),
        pytest.param(
            with_status(
                "train-lost",
                {
                    "phase": "Failed",
                    "scheduled": 3,
                    "running": 2,
                    "failed": 1,
                    "scheduleStartTime": "2026-12-03T13:20:01Z",
                },
            ),
            members("train-lost"),
            PARAMS,
            Status.FAILED,
            "podgroup batch/train-lost: observed 1 failed member(s), 2 running + 0 succeeded of minMember 3 "
            "(want running + succeeded >= minMember; phase Failed,",
            "1 gang(s) failed below minMember",
            {"failed": 1},
            id="a-PodGroup-Failed-with-its-failed-member-is-one-failure",
        ),
        # -- phases koord never writes --------------------------------------------------------------------
        pytest.param(
            groups("train-unknown"),
            [],
            PARAMS,
            Status.DEGRADED,
            "podgroup batch/train-unknown: observed phase Unknown (phase Unknown, 1 scheduled, 1 running",
            "worth reading",
            {},
            id="unknown",
        ),
        pytest.param(
            groups("train-exploded"),
            [],
            PARAMS,
            Status.ERROR,
            "podgroup batch/train-exploded: observed phase 'Exploded', not a PodGroup phase",
            "cannot judge",
            {},
            id="undefined-phase",
        ),
        pytest.param(
            groups("train-exploded", "train-crashed"),
            [],
            PARAMS,
            Status.FAILED,
            "phase 'Exploded'",
            "1 gang(s) failed",
            {},
            id="a-real-failure-wins-over-what-cannot-be-judged",
        ),
        # -- gangs without a PodGroup ---------------------------------------------------------------------
        pytest.param(
            [],
            members("ann-stuck"),
            PARAMS,
            Status.FAILED,
            "gang batch/ann-stuck: observed 2 member(s) waiting to be scheduled longer than 600 s (want "
            "minMember 2 scheduled within it; declared by pod annotation): pod ann-stuck-0 "
            "PodScheduled=False (Unschedulable) for 2719 s",
            "1 gang(s) stuck waiting of 0 PodGroup(s) and 1 gang(s) without one",
            {"gangs_without_pod_group": 1},
            id="annotation-gang-stuck",
        ),
        pytest.param(
            [],
            members("lw-stuck"),
            PARAMS,
            Status.FAILED,
            "gang batch/lw-stuck: observed 2 member(s)",
            "1 gang(s) stuck",
            {},
            id="deprecated-lightweight-labels",
        ),
        pytest.param(
            [], members("ann-short"), PARAMS, Status.OK, None, "1 incomplete", {}, id="annotation-gang-incomplete"
        ),
        pytest.param(
            [],
            members("ann-partial"),
            PARAMS,
            Status.FAILED,
            "gang batch/ann-partial: observed 1 member(s) waiting to be scheduled longer than 600 s (want "
            "minMember 3 scheduled within it; declared by pod annotation): pod ann-partial-0 "
            "PodScheduled=False (Unschedulable) for 2719 s: 0/10 nodes are available: 10 Insufficient cpu.",
            "1 gang(s) stuck",
            {},
            id="fewer-than-minMember-wait-but-one-was-tried-and-fits-nowhere",
        ),
        pytest.param(
            [],
            members("ann-patient"),
            PARAMS,
            Status.OK,
            None,
            "none stuck",
            {},
            id="annotation-gang-within-its-waiting-time",
        ),
        pytest.param(
            [],
            members("ann-badmin"),
            PARAMS,
            Status.FAILED,
            "gang batch/ann-badmin: observed 1 member(s) waiting to be scheduled longer than 600 s (want "
            "minMember 1 scheduled within it; declared by pod annotation without a valid "
            "gang.scheduling.koordinator.sh/min-available: koord-scheduler never initialises this gang)",
            "1 gang(s) stuck",
            {},
            id="annotation-gang-koord-never-initialises",
        ),
        pytest.param(
            [],
            members("ghost"),
            PARAMS,
            Status.FAILED,
            "gang batch/ghost: observed 1 member(s) waiting to be scheduled longer than 600 s (want minMember "
            "1 scheduled within it; pods labelled pod-group.scheduling.sigs.k8s.io=ghost but no such "
            "PodGroup",
            "1 gang(s) stuck",
            {},
            id="labelled-for-a-PodGroup-that-does-not-exist",
        ),
        # -- pods that do not wait for koord-scheduler ----------------------------------------------------
        pytest.param(
            [],
            members("other-sched", "gated", "leaving", "bound", "skewed", "plain"),
            PARAMS,
            Status.OK,
            None,
            "0 PodGroup(s) and 1 gang(s) without one: none stuck",
            {"pending_pods": 6, "members_waiting": 1, "other_scheduler_pods": 1, "gated_pods": 1},
            id="other-scheduler-gated-leaving-bound-skewed-and-plain-pods",
        ),
        pytest.param(
            [],
            members("other-sched"),
            ANY_SCHEDULER,
            Status.FAILED,
            "gang batch/other-sched: observed 1",
            "1 gang(s) stuck",
            {"scheduler_names": []},
            id="every-scheduler-when-asked",
        ),
        # -- what the sandbox's stand-in wrote (captured) -------------------------------------------------
        pytest.param(
            captured("healthy"),
            [],
            PARAMS,
            Status.OK,
            None,
            "1 PodGroup(s)",
            {"by_phase": {"Running": 1}},
            id="sandbox-healthy",
        ),
        pytest.param(
            captured("podgroup-failed"),
            [],
            PARAMS,
            Status.FAILED,
            "podgroup default/outpost-fault-failed-gang: observed phase Failed at an unrecorded time (3 "
            "failed, 0 running, 0 succeeded of minMember 3)",
            "1 gang(s) failed",
            {},
            id="sandbox-podgroup-failed-managedFields-dropped-by-the-capture",
        ),
        pytest.param(
            captured("podgroup-stuck"),
            [],
            PARAMS,
            Status.OK,
            None,
            "1 Pending without members",
            {"pending_without_members": ["podgroup default/outpost-fault-pending-gang"]},
            id="sandbox-podgroup-stuck-without-its-pods-is-no-failure",
        ),
    ],
)
def test_evaluate(
    raw_groups: list[dict[str, Any]],
    raw_pods: list[dict[str, Any]],
    params: GangSchedulingParams,
    status: Status,
    named: str | None,
    summary: str,
    details: dict[str, Any],
) -> None:
    result = judge(raw_groups, raw_pods, params)
    assert result.status is status, result
    assert summary in result.summary, result.summary
    if named is None:
        assert result.errors == []
    else:
        assert any(line.startswith(named) or named in line for line in result.errors), result.errors
    assert len(result.next_steps) == len(result.errors)  # every line has its step
    for key, value in details.items():
        assert result.details[key] == value, (key, result.details[key])


def test_an_incomplete_gang_points_at_a_member_whose_owner_did_not_create_the_rest() -> None:
    result = judge(groups("train-short"), members("train-short"), INCOMPLETE)
    assert [step.failure for step in result.next_steps] == ["gang-incomplete"]
    first = result.errors[0].split("): pod ")[1].split(" ")[0]
    assert result.next_steps[0].command == f"kubectl -n batch describe pod {first}"


def test_everything_at_once_names_each_problem_once() -> None:
    result = judge(groups(*DOC["podgroups"]), pods(*DOC["pods"]))
    assert result.status is Status.FAILED
    stuck = [
        "podgroup batch/train-partial",
        "podgroup batch/train-stuck",
        "podgroup batch/train-unsynced",
        "gang batch/ann-badmin",
        "gang batch/ann-partial",
        "gang batch/ann-stuck",
        "gang batch/ghost",
        "gang batch/lw-stuck",
    ]
    failed = [
        "podgroup batch/train-crash-untimed",
        "podgroup batch/train-crashed",
        "podgroup batch/train-lost",
        "gang batch/ann-lost",
    ]
    assert result.details["stuck"] == len(stuck)
    assert result.details["failed"] == len(failed)
    assert result.summary == (
        "8 gang(s) stuck waiting and 4 gang(s) failed below minMember of 19 PodGroup(s) and 9 gang(s) without one"
    )
    for ref in stuck + failed + ["podgroup batch/train-spare-lost", "podgroup batch/train-spare-crashed"]:
        assert sum(line.startswith(ref + ":") for line in result.errors) == 1, ref
    # each line's step: its failure class, and a command naming the member pod or PodGroup the line names first
    assert len(result.next_steps) == len(result.errors)
    steps = {line.split(":")[0]: step for line, step in zip(result.errors, result.next_steps, strict=True)}
    assert {ref: step.failure for ref, step in steps.items()} == {
        **dict.fromkeys(stuck, "gang-stuck"),
        "podgroup batch/train-crash-untimed": "podgroup-failed",  # the PodGroup's phase, no recent member failure
        "podgroup batch/train-crashed": "podgroup-failed",
        "podgroup batch/train-lost": "quorum-lost",
        "gang batch/ann-lost": "quorum-lost",
        "podgroup batch/train-exploded": "gang-unjudgeable",
        "podgroup batch/train-spare-crashed": "podgroup-failed",
        "podgroup batch/train-spare-lost": "member-failed",
        "podgroup batch/train-unknown": "podgroup-unknown",
    }
    assert steps["podgroup batch/train-stuck"].command == "kubectl -n batch describe pod train-stuck-0"
    assert steps["podgroup batch/train-lost"].command == "kubectl -n batch describe pod train-lost-2"
    assert steps["podgroup batch/train-crashed"].command == (
        "kubectl -n batch get podgroup train-crashed -o yaml --show-managed-fields"
    )
    assert steps["podgroup batch/train-exploded"].command == "kubectl -n batch get podgroups,pods -o wide"
    assert result.details["by_phase"] == {
        "(unset)": 1,
        "Exploded": 1,
        "Failed": 4,
        "Pending": 3,
        "Running": 3,
        "Scheduling": 6,
        "Unknown": 1,
    }
    assert result.details["stale_failed"][0].startswith("podgroup batch/train-lost-long-ago: 1 member(s) failed")
    assert result.details["quorum_counted_in"] == ["batch"]


@pytest.mark.parametrize(
    ("params", "status"),
    [
        (GangSchedulingParams(stuck_after_seconds=3900), Status.FAILED),
        (GangSchedulingParams(stuck_after_seconds=3960), Status.OK),
    ],
)
def test_the_bound_is_a_parameter(params: GangSchedulingParams, status: Status) -> None:
    assert judge(groups("train-stuck"), members("train-stuck"), params).status is status


def test_a_gangs_own_longer_wait_time_wins_over_the_bound() -> None:
    raw = groups("train-patient")
    raw[0]["spec"]["scheduleTimeoutSeconds"] = 60
    assert judge(raw, members("train-patient")).status is Status.FAILED
    annotated = members("ann-patient")
    for pod in annotated:
        pod["metadata"]["annotations"]["gang.scheduling.koordinator.sh/waiting-time"] = "not-a-duration"
    assert judge([], annotated).status is Status.FAILED  # koord falls back to its default: so do we


@pytest.mark.parametrize(
    ("gang", "window", "status"),
    [
        ("train-crashed", 600, Status.OK),  # phase Failed 920 s ago
        ("train-crashed", 3600, Status.FAILED),
        ("train-spare-lost", 300, Status.OK),  # member failed 320 s ago
        ("train-spare-lost", 3600, Status.DEGRADED),
    ],
)
def test_the_failed_window_is_a_parameter(gang: str, window: int, status: Status) -> None:
    result = judge(groups(gang), members(gang), GangSchedulingParams(failed_window_seconds=window))
    assert result.status is status
    assert len(result.details["stale_failed"]) == (1 if status is Status.OK else 0)
    assert result.details["quorum_counted_in"] == (["batch"] if gang == "train-spare-lost" and window > 320 else [])


def test_a_recent_failure_whose_quorum_was_not_read_is_error_not_ok() -> None:
    # fetch's clock ran a day ahead of evaluate's (it went back): fetch found the failure old and read no quorum.
    result = judge(groups("train-lost"), members("train-lost"), fetched_at=NOW + timedelta(days=1))
    assert result.status is Status.ERROR
    assert result.errors == [
        "podgroup batch/train-lost: 1 member(s) failed within 3600 s but the running members of "
        "namespace batch were not read (the probe's clock went back?): pod train-lost-2 failed "
        "40 s ago (container worker exited 1, Error)"
    ]
    assert [step.failure for step in result.next_steps] == ["gang-unjudgeable"]


def _terminated(name: str, finished: str | None, exit_code: int = 1) -> dict[str, Any]:
    end: dict[str, Any] = {"exitCode": exit_code, "reason": "Error", "startedAt": "2026-12-03T13:00:00Z"}
    if finished:
        end["finishedAt"] = finished
    return {"name": name, "ready": False, "restartCount": 0, "state": {"terminated": end}}


@pytest.mark.parametrize(
    ("status", "failed_at", "cause"),
    [
        pytest.param(
            DOC["pods"]["train-lost-2"]["status"],
            "2026-12-03T13:34:40Z",
            "container worker exited 1, Error",
            id="stale-Ready-True-is-ignored-the-container-end-counts",
        ),
        pytest.param(
            DOC["pods"]["ann-lost-0"]["status"],
            "2026-12-03T13:25:31Z",
            "Evicted: The node was low",
            id="evicted-by-the-kubelet",
        ),
        pytest.param(
            {
                "phase": "Failed",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "PodFailed",
                        "lastTransitionTime": "2026-12-03T13:31:00Z",
                    }
                ],
            },
            "2026-12-03T13:31:00Z",
            "no reason recorded",
            id="only-the-Ready-False-transition",
        ),
        pytest.param(
            {
                "phase": "Failed",
                "initContainerStatuses": [_terminated("setup", "2026-12-03T13:10:00Z", 0)],
                "containerStatuses": [
                    _terminated("worker", "2026-12-03T13:12:00Z", 2),
                    _terminated("sidecar", "2026-12-03T13:12:30Z", 0),
                ],
            },
            "2026-12-03T13:12:30Z",
            "container worker exited 2, Error",
            id="newest-end-and-first-non-zero-exit",
        ),
        pytest.param(
            {"phase": "Failed", "containerStatuses": [_terminated("worker", None)]},
            None,
            "container worker exited 1, Error",
            id="no-time-recorded",
        ),
        pytest.param(
            {
                "phase": "Failed",
                "reason": "DeadlineExceeded",
                "message": "Pod was active on the node longer than the specified deadline",
            },
            None,
            "DeadlineExceeded: Pod was active on the node longer than the specified deadline",
            id="activeDeadlineSeconds",
        ),
    ],
)
def test_a_failed_member_is_dated_and_explained_by_its_status(
    status: dict[str, Any], failed_at: str | None, cause: str
) -> None:
    pod = parse_items(
        PodSchedulingOutline, [{"metadata": {"name": "m", "namespace": "batch"}, "status": status}], "test"
    )[0]
    assert gang_scheduling.failed_at(pod) == parse_time(failed_at)
    assert gang_scheduling.failed_member(pod, NOW).cause.startswith(cause)


def test_a_label_selector_leaves_gangs_without_a_pod_group_unjudged_and_counted() -> None:
    result = judge([], members("ann-stuck", "ghost"), GangSchedulingParams(label_selector="team=ml"))
    assert result.status is Status.OK
    assert result.details["not_attributed_pods"] == 3


def test_now_is_what_waits_and_failures_are_judged_against() -> None:
    raw_groups, raw_pods = groups("train-stuck", "train-crashed"), members("train-stuck")
    assert judge(raw_groups[:1], raw_pods, now=NOW - timedelta(minutes=56)).status is Status.OK
    # Clock skew: a Failed written "after now" is just now, never stale.
    assert judge(raw_groups[1:], [], now=NOW - timedelta(hours=2)).status is Status.FAILED
    later = judge(raw_groups, raw_pods, now=NOW + timedelta(hours=1))
    assert [line.split(":")[0] for line in later.errors] == ["podgroup batch/train-stuck"]
    assert len(later.details["stale_failed"]) == 1
    # The same for a failed member: stale an hour on, just now when it failed "after now".
    assert judge(groups("train-lost"), members("train-lost"), now=NOW + timedelta(hours=1)).status is Status.OK
    assert judge(groups("train-lost"), members("train-lost"), now=NOW - timedelta(hours=2)).status is Status.FAILED


def test_a_member_without_any_time_cannot_be_judged() -> None:
    raw = members("ann-stuck")
    for pod in raw:
        pod["metadata"].pop("creationTimestamp")
        pod["status"]["conditions"][0].pop("lastTransitionTime")
    result = judge([], raw)
    assert result.status is Status.ERROR
    assert result.errors == [
        "gang batch/ann-stuck: member(s) ann-stuck-0, ann-stuck-1 carry no creationTimestamp or "
        "PodScheduled time, wait not observed"
    ]


def test_many_stuck_gangs_are_listed_ten_then_counted() -> None:
    raw = []
    for i in range(13):
        for pod in members("ann-stuck"):
            pod["metadata"]["annotations"]["gang.scheduling.koordinator.sh/name"] = f"g{i:02d}"
            pod["metadata"]["name"] = f"g{i:02d}-{pod['metadata']['name']}"
            raw.append(pod)
    result = judge([], raw)
    assert result.details["stuck"] == 13
    assert len(result.errors) == 11
    assert result.errors[-1] == "... and 3 more"
    assert [step.failure for step in result.next_steps] == ["gang-stuck"] * 10 + ["more-gangs"]
    assert result.next_steps[0].command == "kubectl -n batch describe pod g00-ann-stuck-0"
    assert result.next_steps[-1].command.startswith("kubectl get podgroups -A -o wide && kubectl get pods -A ")


def test_phase_time_is_the_newest_managed_fields_entry_owning_status_phase() -> None:
    group = parse_items(PodGroup, groups("train-crashed"), "test")[0]
    assert group.phase_written_at == parse_time("2026-12-03T13:20:00Z")
    assert [entry.owns("status", "phase") for entry in group.metadata.managed_fields] == [False, True]
    assert parse_items(PodGroup, groups("train-crash-untimed"), "test")[0].phase_written_at is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("600s", 600.0),
        ("10m", 600.0),
        ("1h30m", 5400.0),
        ("1.5m", 90.0),
        ("2h", 7200.0),
        ("500ms", 0.5),
        ("0", 0.0),
        ("-5s", -5.0),
        ("", None),
        ("10", None),
        ("5 m", None),
        ("abc", None),
        ("1d", None),
    ],
)
def test_go_durations_parse_as_go_does(text: str, seconds: float | None) -> None:
    assert go_duration_seconds(text) == seconds


def test_bad_params_are_refused() -> None:
    with pytest.raises(ValidationError):
        GangSchedulingParams(label_selector="a in (")
    with pytest.raises(ValidationError):
        GangSchedulingParams(stuck_after_seconds=0)
    with pytest.raises(ValidationError):
        GangSchedulingParams(failed_window_seconds=10)
    with pytest.raises(ValidationError):
        GangSchedulingParams(waiting_phases=["Pending"])  # type: ignore[call-arg]


def _whole_second_now() -> datetime:
    """The real clock (fetch decides on it) to the second, as finishedAt is written: judging with this exact
    instant keeps "failed 30 s ago" from reading 31 when the test straddles a second."""
    return datetime.now(UTC).replace(microsecond=0)


def _failed_ago(
    raw: list[dict[str, Any]], name: str, seconds: int, namespace: str = "", now: datetime | None = None
) -> list[dict[str, Any]]:
    """`raw` with pod `name` failed `seconds` before `now` (default: the real clock), in `namespace`."""
    finished = ((now or _whole_second_now()) - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for pod in raw:
        if namespace:
            pod["metadata"]["namespace"] = namespace
        if pod["metadata"]["name"] == name:
            pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = finished
    return raw


def _api(*extra: dict[str, Any]) -> FakeApiServer:
    running = copy.deepcopy(DOC["pods"]["bound-0"])
    running["metadata"]["name"] = "running-0"
    running["status"]["phase"] = "Running"
    return FakeApiServer().add(
        *groups("train-stuck", "train-running", "train-lost"),
        *[
            {"kind": "Pod", "apiVersion": "v1", **pod}
            for pod in [*members("train-stuck", "ann-stuck"), running, *extra]
        ],
    )


def _pod_reads(api: FakeApiServer) -> list[tuple[str, str | None]]:
    return [(r.path, r.param("fieldSelector")) for r in api.requests if r.path.endswith("/pods")]


def test_fetch_reads_pods_neither_running_nor_succeeded_once_page_by_page() -> None:
    api = _api(*_failed_ago(members("train-lost"), "train-lost-2", 7200))  # failed two hours ago: stale
    with fake_cluster(api, page_size=1) as cluster:
        data = gang_scheduling.fetch(cluster, PARAMS)
    assert [g.name for g in data.pod_groups] == ["train-lost", "train-running", "train-stuck"]
    assert sorted(p.name for p in data.unsettled_pods) == [
        "ann-stuck-0",
        "ann-stuck-1",
        "train-lost-2",
        "train-stuck-0",
        "train-stuck-1",
        "train-stuck-2",
        "train-stuck-3",
    ]
    assert data.settled_pods == {}  # no recent failure: no quorum to count
    assert _pod_reads(api) == [(PODS_PATH, UNSETTLED_PHASES)] * 7
    assert {r.param("limit") for r in api.requests if r.path == PODS_PATH} == {"1"}  # paginated
    assert [r.path for r in api.requests if r.path == PG_PATH] == [PG_PATH] * 3
    result = gang_scheduling.evaluate(data, PARAMS, datetime.now(UTC))
    assert result.details["stuck"] == 2
    assert result.details["stale_failed"][0].startswith("podgroup batch/train-lost: 1 member(s) failed more than")


def test_fetch_counts_running_and_succeeded_members_only_where_one_failed_recently() -> None:
    now = _whole_second_now()
    recent = _failed_ago(members("train-lost"), "train-lost-2", 30, now=now)
    old_elsewhere = _failed_ago(members("ann-lost"), "ann-lost-0", 7200, namespace="ml", now=now)
    api = _api(*recent, *old_elsewhere)
    with fake_cluster(api, page_size=2) as cluster:
        data = gang_scheduling.fetch(cluster, PARAMS)
    batch = "/api/v1/namespaces/batch/pods"
    assert list(dict.fromkeys(_pod_reads(api))) == [(PODS_PATH, UNSETTLED_PHASES), (batch, SETTLED_PHASES)]
    assert {ns: sorted(p.name for p in pods) for ns, pods in data.settled_pods.items()} == {
        "batch": ["running-0", "train-lost-0", "train-lost-1"]
    }
    result = gang_scheduling.evaluate(data, PARAMS, now)
    assert result.status is Status.FAILED
    assert [line for line in result.errors if "failed member" in line] == [
        "podgroup batch/train-lost: observed 1 failed member(s), 2 running + 0 succeeded of minMember 3 (want running "
        "+ succeeded >= minMember; phase Running, 3 scheduled, 3 running, 0 succeeded, 0 failed of minMember 3): pod "
        "train-lost-2 failed 30 s ago (container worker exited 1, Error)"
    ]
    assert result.details["quorum_counted_in"] == ["batch"]
    assert result.details["stale_failed"][0].startswith("gang ml/ann-lost: 1 member(s) failed more than 3600 s ago")


def test_fetch_in_one_namespace_reads_every_list_there() -> None:
    api = _api(*_failed_ago(members("train-lost"), "train-lost-2", 30))
    with fake_cluster(api) as cluster:
        data = gang_scheduling.fetch(cluster, GangSchedulingParams(namespace="batch"))
    batch = "/api/v1/namespaces/batch/pods"
    assert {r.path for r in api.requests} == {"/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/batch/podgroups", batch}
    assert _pod_reads(api) == [(batch, UNSETTLED_PHASES), (batch, SETTLED_PHASES)]
    assert data.pods_path == batch


def test_api_not_served_is_error_not_ok() -> None:
    api = FakeApiServer().respond(
        PG_PATH, 404, {"kind": "Status", "code": 404, "message": "the server could not find the requested resource"}
    )
    with fake_cluster(api) as cluster, pytest.raises(ClusterError, match="not served by cluster fake"):
        gang_scheduling.fetch(cluster, PARAMS)


def test_pods_forbidden_is_error_not_ok() -> None:
    api = _api().respond(
        PODS_PATH,
        403,
        {
            "kind": "Status",
            "code": 403,
            "reason": "Forbidden",
            "message": 'pods is forbidden: User "outpost-probe" cannot list resource',
        },
    )
    with fake_cluster(api) as cluster, pytest.raises(ClusterError, match="HTTP 403"):
        gang_scheduling.fetch(cluster, PARAMS)


@pytest.mark.parametrize(
    ("kind", "raw", "field"),
    [
        (
            PodGroup,
            {**groups("train-running")[0], "status": {"phase": "Running", "scheduled": "many"}},
            r"status\.scheduled",
        ),
        (PodSchedulingOutline, {"metadata": {"name": "p", "annotations": {"a": 1}}}, r"metadata\.annotations"),
    ],
)
def test_wrong_field_type_is_malformed(kind: Any, raw: dict[str, Any], field: str) -> None:
    with pytest.raises(MalformedResponse, match=field):
        parse_items(kind, [raw], "LIST")
