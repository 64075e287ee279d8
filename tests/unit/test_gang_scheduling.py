"""gang-scheduling over PodGroups and member pods (Pending, Running, Failed) shaped as koord-scheduler v1.6.0 and
the kubelet write them (built from the Go types: tests/unit/fixtures/gang_scheduling/koord_objects.json says how,
and which case was measured against the real koord-scheduler), one table row per rule (evaluate_cases.json beside
it, its rows read by `case`), plus the objects captured from the sandbox's stand-in (no koord-scheduler ran there)
and the fetch over the kit's API server."""

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
    counted_namespaces,
)
from outpost.errors import ClusterError, MalformedResponse
from outpost.kube import PodGroup, parse_items, parse_time
from outpost.kube.golang import go_duration_seconds
from outpost.kube.objects import PodSchedulingOutline
from outpost.result import Status

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gang_scheduling"
CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox" / "workload-checks"
DOC: dict[str, Any] = json.loads((FIXTURES / "koord_objects.json").read_text())
CASES: dict[str, Any] = json.loads((FIXTURES / "evaluate_cases.json").read_text())
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
    Succeeded, and the Running and Succeeded ones of each namespace holding a recent failed member or a member
    near its gang's wait time whose quorum the rest do not show."""
    pod_groups = parse_items(PodGroup, raw_groups, "test")
    every_pod = parse_items(PodSchedulingOutline, raw_pods, "test")
    unsettled = [pod for pod in every_pod if pod.status.phase not in ("Running", "Succeeded")]
    settled = {
        namespace: [
            pod for pod in every_pod if pod.namespace == namespace and pod.status.phase in ("Running", "Succeeded")
        ]
        for namespace in counted_namespaces(pod_groups, unsettled, params, fetched_at or now)
    }
    data = GangSchedulingData(PG_PATH, pod_groups, PODS_PATH, unsettled, settled)
    return gang_scheduling.evaluate(data, params, now)


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


def bound_pending(pod: dict[str, Any]) -> None:
    """A running member as it was just after binding: on its node, Pending, its containers not started yet."""
    pod["status"] = copy.deepcopy(DOC["pods"]["bound-0"]["status"])


CHANGES: dict[str, Callable[[dict[str, Any]], None]] = {
    change.__name__: change for change in (succeeded, untimed, deleting, other_scheduler, bound_pending)
}
"""The edits a row of evaluate_cases.json may make to a member pod, by name."""


def captured(state: str) -> list[dict[str, Any]]:
    doc: dict[str, Any] = json.loads((CAPTURED / f"podgroups.{state}.json").read_text())
    return list(doc["items"])


def case(row: dict[str, Any]) -> Any:
    """A row of evaluate_cases.json as test_evaluate's arguments (its "about" says what each key means)."""
    raw_groups = captured(row["captured"]) if "captured" in row else groups(*row.get("podgroups", []))
    if "podgroup_status" in row:  # as koord-scheduler rewrites it
        raw_groups[0]["status"] = row["podgroup_status"]
    if "labels" in row:  # what a label selector lists
        for group in raw_groups:
            group["metadata"].setdefault("labels", {}).update(row["labels"])
    for group in raw_groups:
        group["metadata"].setdefault("annotations", {}).update(row.get("podgroup_annotations", {}))
        group["spec"].update(row.get("podgroup_spec", {}))
    raw_pods = members(*row.get("members", [])) + pods(*row.get("pods", []))
    for pod in raw_pods:
        pod["metadata"].setdefault("annotations", {}).update(row.get("pod_annotations", {}))
    for name, change in row.get("changes", []):
        CHANGES[change](next(pod for pod in raw_pods if pod["metadata"]["name"] == name))
    return pytest.param(
        raw_groups,
        raw_pods,
        GangSchedulingParams(**row.get("params", {})),
        Status(row["status"]),
        row.get("named"),
        row["summary"],
        row.get("details", {}),
        id=row["id"],
    )


INCOMPLETE = GangSchedulingParams(fail_incomplete=True)


@pytest.mark.parametrize(
    ("raw_groups", "raw_pods", "params", "status", "named", "summary", "details"),
    [case(row) for rows in CASES["sections"].values() for row in rows],
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
        "8 gang(s) stuck waiting and 4 gang(s) failed below minMember of 20 PodGroup(s) and 11 gang(s) without one"
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
        "Running": 4,
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


def test_a_gangs_own_wait_time_wins_over_the_default_shorter_or_longer() -> None:
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


def test_an_overdue_gang_whose_running_members_were_not_read_is_error_not_ok() -> None:
    # fetch's clock ran an hour behind evaluate's: its spares had not neared the wait time, no Running pod was read.
    result = judge([], members("ann-elastic"), fetched_at=NOW - timedelta(hours=1))
    assert result.status is Status.ERROR
    assert result.errors[0].startswith(
        "gang batch/ann-elastic: 2 member(s) waited longer than 600 s but the running members of namespace batch "
        "were not read (the probe's clock went back?): pod ann-elastic-2 PodScheduled=False (Unschedulable)"
    )
    assert [step.failure for step in result.next_steps] == ["gang-unjudgeable"]


@pytest.mark.parametrize(
    ("seconds_before", "counted"),
    [(600 - 61, []), (600 - 59, ["batch"]), (601, ["batch"])],
    ids=["61-s-before-its-wait-time", "within-the-read-ahead", "past-its-wait-time"],
)
def test_fetch_counts_a_namespace_a_read_ahead_before_a_member_reaches_its_wait_time(
    seconds_before: int, counted: list[str]
) -> None:
    waited = parse_items(PodSchedulingOutline, pods("ann-elastic-2", "ann-elastic-3"), "test")
    since = waited[0].status.conditions[0].last_transition_time
    assert since is not None
    assert counted_namespaces([], waited, PARAMS, since + timedelta(seconds=seconds_before)) == counted


def test_only_waiting_and_uninitialised_gangs_never_cost_a_read() -> None:
    only_waiting = pods("ann-elastic-2", "ann-elastic-3", "ghost-0", "ann-badmin-0")
    for pod in only_waiting[:2]:
        pod["metadata"]["annotations"]["gang.scheduling.koordinator.sh/match-policy"] = "only-waiting"
    assert counted_namespaces([], parse_items(PodSchedulingOutline, only_waiting, "test"), PARAMS, NOW) == []


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
    # No recent failure, but members waited past their wait time with no member bound among the pods read: the
    # gangs' Running members decide whether minMember are bound, so their namespace is counted, once.
    assert {ns: sorted(p.name for p in pods) for ns, pods in data.settled_pods.items()} == {
        "batch": ["running-0", "train-lost-0", "train-lost-1"]
    }
    assert list(dict.fromkeys(_pod_reads(api))) == [
        (PODS_PATH, UNSETTLED_PHASES),
        ("/api/v1/namespaces/batch/pods", SETTLED_PHASES),
    ]
    assert _pod_reads(api).count((PODS_PATH, UNSETTLED_PHASES)) == 7
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


def test_fetch_counts_the_running_members_of_an_elastic_gang_whose_spares_wait() -> None:
    api = FakeApiServer().add(*[{"kind": "Pod", "apiVersion": "v1", **pod} for pod in members("ann-elastic")])
    with fake_cluster(api) as cluster:
        data = gang_scheduling.fetch(cluster, PARAMS)
    assert sorted(p.name for p in data.unsettled_pods) == ["ann-elastic-2", "ann-elastic-3"]
    assert {ns: sorted(p.name for p in pods) for ns, pods in data.settled_pods.items()} == {
        "batch": ["ann-elastic-0", "ann-elastic-1"]
    }
    result = gang_scheduling.evaluate(data, PARAMS, datetime.now(UTC))
    assert result.status is Status.OK, result.errors
    assert result.details["beyond_quorum"][0].startswith(
        "gang batch/ann-elastic: 2 member(s) wait beyond the quorum (2 bound of minMember 2; declared by pod "
        "annotation, total-number 4)"
    )


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
