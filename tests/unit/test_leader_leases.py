"""leader-leases over the captured Leases (and manager pods): held, renewed within leaseDurationSeconds + slack,
and, for the manager Leases, some pod left to renew them. Clock skew and omitted fields included."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from kit import FakeApiServer, fake_cluster
from kit.managers import State, load
from outpost.checks import leader_leases
from outpost.checks.leader_leases import LeaderLease, LeaderLeasesParams
from outpost.result import Result, Status

PARAMS = LeaderLeasesParams()


def run(state: State, now: datetime | None = None, params: LeaderLeasesParams = PARAMS,
        objects: list[dict[str, Any]] | None = None) -> Result:
    api = FakeApiServer().add_all(objects if objects is not None else state.objects)
    with fake_cluster(api) as cluster:
        data = leader_leases.fetch(cluster, params)
    return leader_leases.evaluate(data, params, now or state.captured_at)


def edited(state: State, lease: str, **spec: Any) -> list[dict[str, Any]]:
    """The state's objects with Lease `lease`'s spec fields replaced (None removes one, as the API omits it)."""
    objects = copy.deepcopy(state.objects)
    target = next(o for o in objects if o["kind"] == "Lease" and o["metadata"]["name"] == lease)
    for key, value in spec.items():
        if value is None:
            target["spec"].pop(key, None)
        else:
            target["spec"][key] = value
    return objects


def test_healthy_capture_is_ok() -> None:
    result = run(load("healthy"))
    assert result.status is Status.OK, result.errors
    assert result.summary == "4/4 leader leases held and renewed in time"
    manager = result.details["leases"]["koordinator-system/koordinator-manager"]
    assert manager["holder"].startswith("koord-manager-")
    assert manager["candidates"] == load("healthy").pods("koordinator-system")


@pytest.mark.parametrize(("late", "status"), [(24, Status.OK), (26, Status.FAILED)])
def test_lateness_is_judged_against_duration_plus_slack(late: int, status: Status) -> None:
    state = load("healthy")
    renewed = state.one("Lease", "kruise-manager")["spec"]["renewTime"]
    now = datetime.fromisoformat(renewed.replace("Z", "+00:00")) + timedelta(seconds=late)
    result = run(state, now)
    assert result.status is status
    if status is Status.FAILED:
        assert len(result.errors) == 4  # the sandbox renews all four together
        assert any(line.startswith("lease kruise-system/kruise-manager: observed renewTime 26 s ago (want within 15 s "
                                   "+ 10 s slack); last holder kruise-controller-manager-") for line in result.errors)


def test_clock_skew_a_renewal_in_the_future_is_fresh() -> None:
    state = load("healthy")
    result = run(state, state.captured_at - timedelta(minutes=5))
    assert result.status is Status.OK
    assert result.details["leases"]["kruise-system/kruise-manager"]["renew_age_seconds"] < -290


def test_captured_stale_lease_fails_naming_it_and_its_last_holder() -> None:
    state = load("lease_stale_kruise")
    result = run(state)
    assert result.status is Status.FAILED
    (line,) = result.errors
    holder = state.one("Lease", "kruise-manager")["spec"]["holderIdentity"]
    assert line.startswith("lease kruise-system/kruise-manager: observed renewTime 12")
    assert line.endswith(f"(want within 15 s + 10 s slack); last holder {holder}")
    assert result.summary == line


def test_captured_scale_to_zero_fails_before_the_lease_expires() -> None:
    state = load("scaled_to_zero_kruise")
    result = run(state)
    assert result.status is Status.FAILED
    (line,) = result.errors
    holder = state.one("Lease", "kruise-manager")["spec"]["holderIdentity"]
    assert line.startswith("lease kruise-system/kruise-manager: no running pod matches "
                           "control-plane=controller-manager in kruise-system, nobody can renew it "
                           f"(last holder {holder}, renewed ")
    assert result.details["leases"]["kruise-system/kruise-manager"]["candidates"] == []


def test_holder_pod_gone_while_others_run_is_degraded() -> None:
    state = load("lease_stale_kruise")  # its pods were replaced; the Lease still names the old one
    objects = edited(state, "kruise-manager", renewTime=state.one("Lease", "koord-scheduler")["spec"]["renewTime"])
    result = run(state, objects=objects)
    assert result.status is Status.DEGRADED
    (line,) = result.errors
    assert line.startswith("lease kruise-system/kruise-manager: holder pod kruise-controller-manager-")
    assert line.endswith("no longer runs; 2 candidate(s) (" + ", ".join(state.pods("kruise-system"))
                         + ") should take over")


@pytest.mark.parametrize(("spec", "line"), [
    ({"holderIdentity": None}, "lease koordinator-system/koord-scheduler: not held (last renewed "),
    ({"holderIdentity": None, "renewTime": None},
     "lease koordinator-system/koord-scheduler: not held (never renewed; want a holder renewing it)"),
    ({"leaseDurationSeconds": None},
     "lease koordinator-system/koord-scheduler: no leaseDurationSeconds (last holder koord-scheduler-sandbox_"),
    ({"renewTime": None}, "lease koordinator-system/koord-scheduler: no renewTime (last holder koord-scheduler-"),
])
def test_omitted_fields_fail(spec: dict[str, Any], line: str) -> None:
    state = load("healthy")
    result = run(state, objects=edited(state, "koord-scheduler", **spec))
    assert result.status is Status.FAILED
    assert len(result.errors) == 1
    assert result.errors[0].startswith(line)


def test_absent_lease_is_named() -> None:
    state = load("healthy")
    objects = [o for o in state.objects if not (o["kind"] == "Lease" and o["metadata"]["name"] == "koord-descheduler")]
    result = run(state, objects=objects)
    assert result.status is Status.FAILED
    assert result.errors == ["lease koordinator-system/koord-descheduler: not found (want a held leader Lease)"]


def test_several_problems_are_each_named_and_the_worst_wins() -> None:
    state = load("lease_stale_kruise")
    objects = [o for o in state.objects if not (o["kind"] == "Lease" and o["metadata"]["name"] == "koord-scheduler")]
    result = run(state, objects=objects)
    assert result.status is Status.FAILED
    assert result.summary.startswith("2 of 4 leader leases unhealthy: lease koordinator-system/koord-scheduler")
    assert [line.split(":")[0] for line in result.errors] == ["lease koordinator-system/koord-scheduler",
                                                             "lease kruise-system/kruise-manager"]


def test_configured_leases_only_and_pods_listed_once_per_selector() -> None:
    state = load("healthy")
    kruise = LeaderLease(name="kruise-manager", namespace="kruise-system",
                         holder_selector="control-plane=controller-manager")
    params = LeaderLeasesParams(leases=[kruise, kruise], slack_seconds=0)
    api = FakeApiServer().add_all(state.objects)
    with fake_cluster(api) as cluster:
        data = leader_leases.fetch(cluster, params)
    assert leader_leases.evaluate(data, params, state.captured_at).status is Status.OK
    assert [r.path for r in api.requests].count("/api/v1/namespaces/kruise-system/pods") == 1


@pytest.mark.parametrize("bad", [{"leases": []}, {"leases": [{"name": "x", "namespace": "y", "holder_selector": ""}]},
                                 {"leases": [{"name": "x", "namespace": "y", "holder_selector": "a in ("}]},
                                 {"leases": [{"name": "x"}]}, {"slack_seconds": -1}])
def test_bad_params_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        LeaderLeasesParams.model_validate(bad)
