"""gang-scheduling over PodGroups captured from the sandbox (healthy, podgroup-failed, podgroup-stuck), plus
the shapes a real cluster also produces: no status at all, unknown phases, clock skew, no PodGroup API."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kit import FakeApiServer, fake_cluster
from outpost.checks import gang_scheduling
from outpost.checks.gang_scheduling import GangSchedulingData, GangSchedulingParams
from outpost.errors import ClusterError, MalformedResponse
from outpost.kube import PodGroup, parse_items
from outpost.result import Status

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox" / "workload-checks"
NOW = datetime(2026, 12, 3, 13, 35, 20, tzinfo=UTC)
PARAMS = GangSchedulingParams()


def items(state: str) -> list[dict[str, Any]]:
    doc: dict[str, Any] = json.loads((CAPTURED / f"podgroups.{state}.json").read_text())
    return list(doc["items"])


def judge(raw: list[dict[str, Any]], params: GangSchedulingParams = PARAMS, now: datetime = NOW) -> Any:
    data = GangSchedulingData("/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups", parse_items(PodGroup, raw, "test"))
    return gang_scheduling.evaluate(data, params, now)


def with_status(status: dict[str, Any] | None, created: str = "2026-12-03T13:00:00Z") -> dict[str, Any]:
    group = copy.deepcopy(items("healthy")[0])
    group["metadata"]["name"] = "g1"
    group["metadata"]["creationTimestamp"] = created
    if status is None:
        group.pop("status", None)
    else:
        group["status"] = status
    return group


@pytest.mark.parametrize(
    ("raw", "status", "named", "summary"),
    [
        (items("healthy"), Status.OK, None, "1 PodGroup(s), none Failed"),
        (items("podgroup-failed"), Status.FAILED, "podgroup default/outpost-fault-failed-gang: observed phase Failed",
         "1 Failed of 2 PodGroup(s)"),
        (items("podgroup-stuck"), Status.FAILED,
         "podgroup default/outpost-fault-pending-gang: observed phase Pending for 3609 s", "1 stuck waiting"),
        ([], Status.OK, None, "0 PodGroup(s)"),
        # The API omits an empty status: a PodGroup the controller never touched is Pending since creation.
        ([with_status(None)], Status.FAILED, "podgroup default/g1: observed phase Pending for 2120 s", "stuck"),
        ([with_status(None, created="2026-12-03T13:30:00Z")], Status.OK, None, "none Failed"),
        ([with_status({"phase": "Scheduling", "scheduleStartTime": "2026-12-03T13:34:00Z"})], Status.OK, None, ""),
        ([with_status({"phase": "PreScheduling", "scheduleStartTime": "2026-12-03T13:00:00Z"})], Status.FAILED,
         "observed phase PreScheduling for 2120 s", "1 stuck"),
        # Clock skew: a start in the future is "just started", never stuck.
        ([with_status({"phase": "Pending", "scheduleStartTime": "2026-12-03T15:00:00Z"})], Status.OK, None, ""),
        ([with_status({"phase": "Finished", "succeeded": 3})], Status.OK, None, ""),
        ([with_status({"phase": "Unknown"})], Status.DEGRADED, "podgroup default/g1: observed phase Unknown",
         "phase Unknown"),
        ([with_status({"phase": "Exploded"})], Status.ERROR, "observed phase 'Exploded', not a PodGroup phase",
         "cannot judge"),
        # A real failure is still a failure when something else cannot be judged.
        ([with_status({"phase": "Exploded"}), *items("podgroup-failed")], Status.FAILED, "phase 'Exploded'",
         "1 Failed"),
    ],
)
def test_evaluate(raw: list[dict[str, Any]], status: Status, named: str | None, summary: str) -> None:
    result = judge(raw)
    assert result.status is status, result
    assert summary in result.summary
    if named is None:
        assert result.errors == []
    else:
        assert any(named in line for line in result.errors), result.errors


def test_stuck_limit_is_a_parameter() -> None:
    raw = items("podgroup-stuck")
    assert judge(raw, GangSchedulingParams(stuck_after_seconds=7200)).status is Status.OK
    assert judge(raw, GangSchedulingParams(stuck_after_seconds=3600)).status is Status.FAILED


def test_failed_and_waiting_phases_are_parameters() -> None:
    raw = [with_status({"phase": "Scheduling", "scheduleStartTime": "2026-12-03T12:00:00Z"})]
    assert judge(raw, GangSchedulingParams(waiting_phases=["Pending"])).status is Status.OK
    assert judge(raw, GangSchedulingParams(failed_phases=["Failed", "Scheduling"])).status is Status.FAILED


def test_details_count_phases() -> None:
    result = judge(items("podgroup-failed"))
    assert result.details["by_phase"] == {"Failed": 1, "Running": 1}
    assert result.details["failed"] == 1
    assert result.details["pod_groups"] == 2


def test_many_failures_are_listed_ten_then_counted() -> None:
    raw = []
    for i in range(13):
        group = with_status({"phase": "Failed"})
        group["metadata"]["name"] = f"g{i:02d}"
        raw.append(group)
    result = judge(raw)
    assert len(result.errors) == 11
    assert result.errors[-1] == "... and 3 more"


def test_bad_params_are_refused() -> None:
    with pytest.raises(ValidationError):
        GangSchedulingParams(label_selector="a in (")
    with pytest.raises(ValidationError):
        GangSchedulingParams(stuck_after_seconds=0)


def test_fetch_lists_every_namespace_with_the_selector() -> None:
    api = FakeApiServer().add(*items("podgroup-failed"))
    with fake_cluster(api, page_size=1) as cluster:
        data = gang_scheduling.fetch(cluster, GangSchedulingParams(label_selector=""))
    assert [g.name for g in data.pod_groups] == ["be-gang", "outpost-fault-failed-gang"]
    assert [r.param("limit") for r in api.requests] == ["1", "1"]  # paginated
    assert gang_scheduling.evaluate(data, PARAMS, NOW).status is Status.FAILED


def test_api_not_served_is_error_not_ok() -> None:
    api = FakeApiServer().respond("/apis/scheduling.sigs.k8s.io/v1alpha1/podgroups", 404,
                                  {"kind": "Status", "code": 404, "message": "the server could not find the "
                                   "requested resource"})
    with fake_cluster(api) as cluster, pytest.raises(ClusterError, match="not served by cluster fake"):
        gang_scheduling.fetch(cluster, PARAMS)


def test_wrong_field_type_is_malformed() -> None:
    group = with_status({"phase": "Running", "scheduled": "many"})
    with pytest.raises(MalformedResponse, match=r"status\.scheduled"):
        parse_items(PodGroup, [group], "LIST podgroups")


def test_now_is_what_ages_are_judged_against() -> None:
    raw = items("podgroup-stuck")
    assert judge(raw, now=NOW - timedelta(minutes=55)).status is Status.OK
