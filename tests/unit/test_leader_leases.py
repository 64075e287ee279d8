"""leader-leases over the captured Leases and manager pods: held, renewed within leaseDurationSeconds + slack, a
duration within the bound, and some candidate pod left to renew them, matched by pod name or, for hostNetwork
pods, by node name. Clock skew and omitted fields included.

The sandbox that was captured ran no koord-scheduler or koord-descheduler pods (a stand-in renewed their Leases),
so `upstream` adds one of each, derived from a captured koord-manager pod with the labels and names upstream's
Deployments give them (config/manager/scheduler.yaml, descheduler.yaml; the Helm chart's koord-scheduler.yaml,
koord-descheduler.yaml), and hands their Leases to them as client-go would (`<pod>_<uuid>`).
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from kit import FakeApiServer, fake_cluster
from kit.managers import State, load
from outpost.checks import leader_leases
from outpost.checks.leader_leases import Candidate, LeaderLease, LeaderLeasesParams
from outpost.kube.timestamps import format_time, parse_time
from outpost.result import Result, Status

PARAMS = LeaderLeasesParams()
KRUISE = "kruise-system"
KOORD = "koordinator-system"
UUID = "c2437a6e-5b1d-4c47-9a0e-3f6f1e2d8b90"
SCHEDULING = {"koord-scheduler": "koord-scheduler-5b9c8f7d6c-x7k2p",
              "koord-descheduler": "koord-descheduler-6f8d9c7b5d-q4w8z"}


def upstream(state: State) -> list[dict[str, Any]]:
    """The state's objects plus a running koord-scheduler and koord-descheduler pod holding their Leases."""
    objects = copy.deepcopy(state.objects)
    template = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["namespace"] == KOORD)
    for app, pod_name in SCHEDULING.items():
        pod = copy.deepcopy(template)
        replica_set = pod_name.rsplit("-", 1)[0]
        pod["metadata"].update(name=pod_name, generateName=f"{replica_set}-", uid=f"{app}-uid",
                               labels={"koord-app": app, "pod-template-hash": replica_set.rsplit("-", 1)[1]})
        pod["metadata"]["ownerReferences"][0].update(name=replica_set, uid=f"{app}-rs-uid")
        objects.append(pod)
        lease = next(o for o in objects if o["kind"] == "Lease" and o["metadata"]["name"] == app)
        lease["spec"]["holderIdentity"] = f"{pod_name}_{UUID}"
    return objects


def run(state: State, now: datetime | None = None, params: LeaderLeasesParams = PARAMS,
        objects: list[dict[str, Any]] | None = None) -> Result:
    api = FakeApiServer().add_all(objects if objects is not None else upstream(state))
    with fake_cluster(api) as cluster:
        data = leader_leases.fetch(cluster, params)
    return leader_leases.evaluate(data, params, now or state.captured_at)


def edited(objects: list[dict[str, Any]], lease: str, **spec: Any) -> list[dict[str, Any]]:
    """`objects` with Lease `lease`'s spec fields replaced (None removes one, as the API omits it)."""
    objects = copy.deepcopy(objects)
    target = next(o for o in objects if o["kind"] == "Lease" and o["metadata"]["name"] == lease)
    for key, value in spec.items():
        if value is None:
            target["spec"].pop(key, None)
        else:
            target["spec"][key] = value
    return objects


def host_network(objects: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """`objects` with the namespace's pods on the host network (Helm value `manager.hostNetwork: true`): the API
    reports the node's address as the pod's."""
    objects = copy.deepcopy(objects)
    for pod in (o for o in objects if o["kind"] == "Pod" and o["metadata"]["namespace"] == namespace):
        pod["spec"]["hostNetwork"] = True
        pod["spec"]["dnsPolicy"] = "ClusterFirstWithHostNet"
        pod["status"]["podIP"] = pod["status"].get("hostIP", "10.0.0.1")
        pod["status"]["podIPs"] = [{"ip": pod["status"]["podIP"]}]
    return objects


def node_of(state: State, pod: str) -> str:
    node: str = state.one("Pod", pod)["spec"]["nodeName"]
    return node


def test_healthy_capture_is_ok() -> None:
    state = load("healthy")
    result = run(state)
    assert result.status is Status.OK, result.errors
    assert result.summary == "4/4 leader leases held and renewed in time"
    manager = result.details["leases"]["koordinator-system/koordinator-manager"]
    assert manager["holder"].startswith("koord-manager-")
    assert manager["candidates"] == state.pods(KOORD)
    assert manager["holder_pod"] == manager["holder"].partition("_")[0]
    scheduler = result.details["leases"]["koordinator-system/koord-scheduler"]
    assert (scheduler["candidates"], scheduler["holder_pod"]) == ([SCHEDULING["koord-scheduler"]],
                                                                  SCHEDULING["koord-scheduler"])
    assert result.details["max_lease_duration_seconds"] == 60


# The holder forms client-go writes (`<hostname>_<uuid>`): the hostname is the pod's name, or with hostNetwork
# the node's. Kruise's pods are on kwok-node-1 (…-5grpx, the captured holder) and kwok-node-2 (…-pt94z).
@pytest.mark.parametrize(("holder", "on_host_network", "status", "holder_pod"), [
    ("{pod}_" + UUID, False, Status.OK, "{pod}"),
    ("{pod}_" + UUID, True, Status.OK, "{pod}"),
    ("{pod}", False, Status.OK, "{pod}"),  # no uuid: the whole identity is the hostname
    ("{node}_" + UUID, True, Status.OK, "{pod}"),
    ("{NODE}_" + UUID, True, Status.OK, "{pod}"),  # the kubelet lowercases the hostname into the Node name
    ("{node}_" + UUID, False, Status.DEGRADED, None),  # the node's hostname, but the pods have their own
    ("kwok-node-9_" + UUID, True, Status.DEGRADED, None),  # a host no candidate runs on
    ("kruise-controller-manager-79857bc4f7-gone1_" + UUID, False, Status.DEGRADED, None),  # replaced pod
    ("outpost-fault-thief", False, Status.DEGRADED, None),  # a foreign holder within a normal duration
])
def test_holder_is_matched_by_pod_name_or_by_node_for_host_network_pods(
        holder: str, on_host_network: bool, status: Status, holder_pod: str | None) -> None:
    state = load("healthy")
    pod = state.pods(KRUISE)[0]
    node = node_of(state, pod)
    identity = holder.format(pod=pod, node=node, NODE=node.upper())
    objects = edited(upstream(state), "kruise-manager", holderIdentity=identity)
    result = run(state, objects=host_network(objects, KRUISE) if on_host_network else objects)
    assert result.status is status, result.errors
    detail = result.details["leases"]["kruise-system/kruise-manager"]
    assert detail["holder_pod"] == (holder_pod.format(pod=pod) if holder_pod else None)
    if status is Status.DEGRADED:
        (line,) = result.errors
        host = identity.rpartition("_")[0] or identity
        assert line == (f"lease kruise-system/kruise-manager: holder {identity} is not a running candidate (no pod "
                        f"named {host}, nor a hostNetwork pod on node {host}); 2 candidate(s) "
                        f"({', '.join(state.pods(KRUISE))}) should take over")


@pytest.mark.parametrize(("holder", "duration", "bound", "status"), [
    ("pod", 15, 60.0, Status.OK),  # every upstream Lease
    ("pod", 59, 60.0, Status.OK),
    ("pod", 60, 60.0, Status.OK),
    ("pod", 61, 60.0, Status.FAILED),  # the rightful holder too: a crash would go unnoticed for 61 s
    ("thief", 60, 60.0, Status.DEGRADED),  # a foreign holder within the bound: a failover is due
    ("thief", 61, 60.0, Status.FAILED),
    ("thief", 3600, 60.0, Status.FAILED),  # the Lease theft
    ("thief", 3600, 3600.0, Status.DEGRADED),  # a cluster that allows it: only the foreign holder is left to see
])
def test_a_lease_duration_over_the_bound_fails_on_its_own(holder: str, duration: int, bound: float,
                                                          status: Status) -> None:
    state = load("healthy")
    identity = f"{state.pods(KRUISE)[0]}_{UUID}" if holder == "pod" else "outpost-fault-thief"
    objects = edited(upstream(state), "kruise-manager", holderIdentity=identity, leaseDurationSeconds=duration,
                     renewTime=format_time(state.captured_at, micro=True))
    result = run(state, params=LeaderLeasesParams(max_lease_duration_seconds=bound), objects=objects)
    assert result.status is status, result.errors
    assert result.details["leases"]["kruise-system/kruise-manager"]["lease_duration_seconds"] == duration
    if status is Status.FAILED:
        assert result.errors == [
            f"lease kruise-system/kruise-manager: observed leaseDurationSeconds {duration} held by {identity} "
            f"(want <= {bound:g} s: nobody would take over for {duration} s after its last renewal, 0 s ago)"]


def test_a_stolen_lease_fails_the_first_run_while_its_manager_restarts_ready_but_not_leading() -> None:
    """The sandbox's Lease theft against a real manager: holder `outpost-fault-thief`, 3600 s, renewTime now. The
    manager exits, restarts, answers /readyz, and waits an hour; every run of that hour is failed."""
    state = load("healthy")
    stolen_at = state.captured_at
    for minutes in (0, 1, 30, 59):
        now = stolen_at + timedelta(minutes=minutes)
        objects = upstream(state)
        for lease in (o for o in objects if o["kind"] == "Lease"):  # the other leaders keep renewing
            lease["spec"]["renewTime"] = format_time(now, micro=True)
        objects = edited(objects, "koordinator-manager", holderIdentity="outpost-fault-thief",
                         leaseDurationSeconds=3600, renewTime=format_time(stolen_at, micro=True),
                         acquireTime=format_time(stolen_at, micro=True), leaseTransitions=1)
        result = run(state, now, objects=objects)
        assert result.status is Status.FAILED
        (line,) = result.errors
        assert line.startswith("lease koordinator-system/koordinator-manager: observed leaseDurationSeconds 3600 "
                               "held by outpost-fault-thief (want <= 60 s")


@pytest.mark.parametrize(("late", "status"), [(24, Status.OK), (26, Status.FAILED)])
def test_lateness_is_judged_against_duration_plus_slack(late: int, status: Status) -> None:
    state = load("healthy")
    renewed = parse_time(state.one("Lease", "kruise-manager")["spec"]["renewTime"])
    assert renewed is not None
    result = run(state, renewed + timedelta(seconds=late))
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


@pytest.mark.parametrize("app", ["koord-scheduler", "koord-descheduler"])
def test_scheduler_and_descheduler_without_a_running_pod_fail(app: str) -> None:
    state = load("healthy")
    objects = [o for o in upstream(state) if o["metadata"]["name"] != SCHEDULING[app]]
    result = run(state, objects=objects)
    assert result.status is Status.FAILED
    (line,) = result.errors
    assert line.startswith(f"lease koordinator-system/{app}: no running pod matches koord-app={app} in "
                           f"koordinator-system, nobody can renew it (last holder {SCHEDULING[app]}_{UUID}, ")


def test_holder_pod_gone_while_others_run_is_degraded() -> None:
    state = load("lease_stale_kruise")  # its pods were replaced; the Lease still names the old one
    renewed = state.one("Lease", "koord-scheduler")["spec"]["renewTime"]
    result = run(state, objects=edited(upstream(state), "kruise-manager", renewTime=renewed))
    assert result.status is Status.DEGRADED
    (line,) = result.errors
    assert line.startswith("lease kruise-system/kruise-manager: holder kruise-controller-manager-79857bc4f7-5grpx_")
    assert line.endswith("2 candidate(s) (" + ", ".join(state.pods(KRUISE)) + ") should take over")


def test_fetch_keeps_name_node_and_host_network_of_running_non_terminating_candidates_only() -> None:
    state = load("healthy")
    objects = host_network(upstream(state), KRUISE)
    leaving, finished = (next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == name)
                         for name in state.pods(KOORD))
    leaving["metadata"]["deletionTimestamp"] = "2026-12-03T13:34:24Z"
    finished["status"]["phase"] = "Failed"
    with fake_cluster(FakeApiServer().add_all(objects)) as cluster:
        data = leader_leases.fetch(cluster, PARAMS)
    assert data.candidates[(KOORD, "koord-app=koord-manager")] == []
    assert data.candidates[(KRUISE, "control-plane=controller-manager")] == [
        Candidate(pod, node_of(state, pod), host_network=True) for pod in state.pods(KRUISE)]
    assert data.candidates[(KOORD, "koord-app=koord-scheduler")] == [
        Candidate(SCHEDULING["koord-scheduler"], node_of(state, state.pods(KOORD)[0]), host_network=False)]


@pytest.mark.parametrize(("spec", "line"), [
    ({"holderIdentity": None}, "lease koordinator-system/koord-scheduler: not held (last renewed "),
    ({"holderIdentity": None, "renewTime": None},
     "lease koordinator-system/koord-scheduler: not held (never renewed; want a holder renewing it)"),
    ({"leaseDurationSeconds": None},
     "lease koordinator-system/koord-scheduler: no leaseDurationSeconds (last holder koord-scheduler-5b9c8f7d6c-"),
    ({"renewTime": None}, "lease koordinator-system/koord-scheduler: no renewTime (last holder koord-scheduler-"),
])
def test_omitted_fields_fail(spec: dict[str, Any], line: str) -> None:
    state = load("healthy")
    result = run(state, objects=edited(upstream(state), "koord-scheduler", **spec))
    assert result.status is Status.FAILED
    assert len(result.errors) == 1
    assert result.errors[0].startswith(line)


def test_absent_lease_is_named() -> None:
    state = load("healthy")
    objects = [o for o in upstream(state)
               if not (o["kind"] == "Lease" and o["metadata"]["name"] == "koord-descheduler")]
    result = run(state, objects=objects)
    assert result.status is Status.FAILED
    assert result.errors == ["lease koordinator-system/koord-descheduler: not found (want a held leader Lease)"]


def test_several_problems_are_each_named_and_the_worst_wins() -> None:
    state = load("lease_stale_kruise")
    objects = [o for o in upstream(state) if not (o["kind"] == "Lease" and o["metadata"]["name"] == "koord-scheduler")]
    result = run(state, objects=objects)
    assert result.status is Status.FAILED
    assert result.summary.startswith("2 of 4 leader leases unhealthy: lease koordinator-system/koord-scheduler")
    assert [line.split(":")[0] for line in result.errors] == ["lease koordinator-system/koord-scheduler",
                                                             "lease kruise-system/kruise-manager"]


def test_configured_leases_only_and_pods_listed_once_per_selector() -> None:
    state = load("healthy")
    kruise = LeaderLease(name="kruise-manager", namespace=KRUISE, holder_selector="control-plane=controller-manager")
    params = LeaderLeasesParams(leases=[kruise, kruise], slack_seconds=0)
    api = FakeApiServer().add_all(state.objects)
    with fake_cluster(api) as cluster:
        data = leader_leases.fetch(cluster, params)
    assert leader_leases.evaluate(data, params, state.captured_at).status is Status.OK
    assert [r.path for r in api.requests].count("/api/v1/namespaces/kruise-system/pods") == 1


def test_a_lease_without_holder_selector_is_judged_without_candidates() -> None:
    state = load("healthy")  # the captured stand-in holders of the scheduling Leases name no pod
    params = LeaderLeasesParams(leases=[LeaderLease(name="koord-scheduler", namespace=KOORD)])
    api = FakeApiServer().add_all(state.objects)
    with fake_cluster(api) as cluster:
        data = leader_leases.fetch(cluster, params)
    assert data.candidates == {}
    result = leader_leases.evaluate(data, params, state.captured_at)
    assert result.status is Status.OK
    assert "candidates" not in result.details["leases"]["koordinator-system/koord-scheduler"]
    assert not any(r.path.endswith("/pods") for r in api.requests)


@pytest.mark.parametrize("bad", [{"leases": []}, {"leases": [{"name": "x", "namespace": "y", "holder_selector": ""}]},
                                 {"leases": [{"name": "x", "namespace": "y", "holder_selector": "a in ("}]},
                                 {"leases": [{"name": "x"}]}, {"slack_seconds": -1},
                                 {"max_lease_duration_seconds": 0}])
def test_bad_params_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        LeaderLeasesParams.model_validate(bad)
