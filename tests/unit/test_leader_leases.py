"""leader-leases over the Leases and candidate pods captured from the real managers in the sandbox (kruise-manager
v1.8.0; koord-manager, koord-scheduler, koord-descheduler v1.6.0, holders `<pod>_<uuid>` as client-go writes them).

The captures prove: healthy is ok; scaled to zero fails at once, before the Lease expires; a stolen Lease (3600 s)
fails on its duration from the first run while the manager's pods are Ready; a manager down or frozen fails on
renewTime naming the last holder, its NotReady but Running pods still candidates. Omitted fields, skew, absent
Leases and hostNetwork holders are edits of the `healthy` capture.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from kit import FakeApiServer, fake_cluster
from kit.managers import STATES, State, load
from outpost.checks import leader_leases
from outpost.checks.leader_leases import Candidate, LeaderLease, LeaderLeasesParams
from outpost.kube.timestamps import format_time, parse_time
from outpost.result import Result, Status

PARAMS = LeaderLeasesParams()
KRUISE = "kruise-system"
KOORD = "koordinator-system"
UUID = "c2437a6e-5b1d-4c47-9a0e-3f6f1e2d8b90"
"""A client-go uuid for holders the tests write themselves (the captured holders keep their own)."""
STEADY = "(want within 15 s + 10 s slack)"
"""leaseDurationSeconds 15 (every upstream Lease, as captured) + the default slack_seconds 10."""

# Holders and pods as captured (healthy.json, then the replicas the sandbox started after scaling kruise back up).
KRUISE_HEALTHY = "kruise-controller-manager-cf4747b9-8qm55", "kruise-controller-manager-cf4747b9-c4wrh"
KRUISE_LATER = "kruise-controller-manager-cf4747b9-kmrh9", "kruise-controller-manager-cf4747b9-zf4bw"
KOORD_MANAGERS = "koord-manager-6b4f5dd6d7-ckx4f", "koord-manager-6b4f5dd6d7-wjghz"
SCHEDULER, DESCHEDULER = "koord-scheduler-84f47756f8-xw59r", "koord-descheduler-65bcb95f74-dsq7m"
KRUISE_HOLDER = f"{KRUISE_HEALTHY[1]}_8d8bae78-0d94-47d6-a8cc-353e85707075"
KOORD_HOLDER = "koord-manager-6b4f5dd6d7-ckx4f_23914cd7-7321-4ae9-b198-09d1789cfea3"
SCHEDULER_HOLDER = f"{SCHEDULER}_87969e8b-aace-45ee-af77-6cee0e54d7ae"

CAPTURED: dict[str, tuple[Status, list[str]]] = {
    "healthy": (Status.OK, []),
    "scaled_to_zero_kruise": (
        Status.FAILED,
        [
            "lease kruise-system/kruise-manager: no running pod matches control-plane=controller-manager in "
            "kruise-system, "
            f"nobody can renew it (last holder {KRUISE_HOLDER}, renewed 1 s ago, expires within 24 s)"
        ],
    ),
    "lease_stolen_kruise": (
        Status.FAILED,
        [
            "lease kruise-system/kruise-manager: observed leaseDurationSeconds 3600 held by outpost-fault-thief (want "
            "<= "
            "60 s: nobody would take over for 3600 s after its last renewal, 0 s ago)"
        ],
    ),
    # 25.19 s: the fault returns as soon as the Lease is past 15 s + 10 s; one decimal keeps it visibly past.
    "manager_down_kruise": (
        Status.FAILED,
        [
            f"lease kruise-system/kruise-manager: observed renewTime 25.2 s ago {STEADY}; last holder "
            "kruise-controller-manager-cf4747b9-kmrh9_3934de5e-e57d-49b4-9059-0cdcf3df7cfa"
        ],
    ),
    "manager_frozen_koord": (
        Status.FAILED,
        [
            f"lease koordinator-system/koordinator-manager: observed renewTime 36.9 s ago {STEADY}; last holder "
            f"{KOORD_HOLDER}"
        ],
    ),
    "manager_down_koord": (
        Status.FAILED,
        [
            f"lease koordinator-system/koordinator-manager: observed renewTime 25.2 s ago {STEADY}; last holder "
            f"{KOORD_HOLDER}"
        ],
    ),
}

# (state, lease, its candidates, the candidate its holder is matched to) for the Lease each fault is aimed at.
MATCHED = [
    ("healthy", "kruise-system/kruise-manager", list(KRUISE_HEALTHY), KRUISE_HEALTHY[1]),
    ("healthy", "koordinator-system/koordinator-manager", list(KOORD_MANAGERS), KOORD_MANAGERS[0]),
    ("healthy", "koordinator-system/koord-scheduler", [SCHEDULER], SCHEDULER),
    ("healthy", "koordinator-system/koord-descheduler", [DESCHEDULER], DESCHEDULER),
    ("scaled_to_zero_kruise", "kruise-system/kruise-manager", [], None),
    ("lease_stolen_kruise", "kruise-system/kruise-manager", list(KRUISE_LATER), None),  # the thief is no pod
    # NotReady (CrashLoopBackOff / SIGSTOPped) but Running: still candidates, the holder still its own pod.
    ("manager_down_kruise", "kruise-system/kruise-manager", list(KRUISE_LATER), KRUISE_LATER[0]),
    ("manager_frozen_koord", "koordinator-system/koordinator-manager", list(KOORD_MANAGERS), KOORD_MANAGERS[0]),
    ("manager_down_koord", "koordinator-system/koordinator-manager", list(KOORD_MANAGERS), KOORD_MANAGERS[0]),
]


def run(
    state: State,
    now: datetime | None = None,
    params: LeaderLeasesParams = PARAMS,
    objects: list[dict[str, Any]] | None = None,
) -> Result:
    api = FakeApiServer().add_all(objects if objects is not None else state.objects)
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


def without(objects: list[dict[str, Any]], kind: str, name: str) -> list[dict[str, Any]]:
    return [o for o in objects if not (o["kind"] == kind and o["metadata"]["name"] == name)]


def host_network(objects: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """`objects` with the namespace's pods on the host network (Helm value `manager.hostNetwork: true`): the API
    reports the node's address as the pod's. The sandbox ran every pod on its one process node, but replicas on the
    host network cannot share a node (their container ports are host ports, which the scheduler keeps apart), so the
    i-th pod by name moves to node `<its node>-<i>`: each node names one pod."""
    objects = copy.deepcopy(objects)
    pods = sorted(
        (o for o in objects if o["kind"] == "Pod" and o["metadata"]["namespace"] == namespace),
        key=lambda o: str(o["metadata"]["name"]),
    )
    for index, pod in enumerate(pods):
        pod["spec"]["hostNetwork"] = True
        pod["spec"]["dnsPolicy"] = "ClusterFirstWithHostNet"
        pod["spec"]["nodeName"] = f"{pod['spec']['nodeName']}-{index}"
        pod["status"]["podIP"] = pod["status"].get("hostIP", "10.0.0.1")
        pod["status"]["podIPs"] = [{"ip": pod["status"]["podIP"]}]
    return objects


def node_of(objects: list[dict[str, Any]], pod: str) -> str:
    node: str = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == pod)["spec"]["nodeName"]
    return node


def only(name: str) -> LeaderLeasesParams:
    """The default parameters, watching upstream Lease `name` alone."""
    return LeaderLeasesParams(leases=[w for w in PARAMS.leases if w.name == name])


def test_every_captured_state_is_judged_here() -> None:
    assert sorted(CAPTURED) == sorted(STATES)
    assert {state for state, *_ in MATCHED} == set(STATES)


@pytest.mark.parametrize(
    ("state_name", "status", "errors"), [(name, *case) for name, case in CAPTURED.items()], ids=list(CAPTURED)
)
def test_captured_states(state_name: str, status: Status, errors: list[str]) -> None:
    result = run(load(state_name))
    assert (result.status, result.errors) == (status, errors)
    assert result.summary == (errors[0] if errors else "4/4 leader leases held and renewed in time")
    assert (result.details["slack_seconds"], result.details["max_lease_duration_seconds"]) == (10, 60)


@pytest.mark.parametrize(
    ("state_name", "lease", "candidates", "holder_pod"),
    MATCHED,
    ids=[f"{state}-{lease.partition('/')[2]}" for state, lease, *_ in MATCHED],
)
def test_captured_holders_and_candidates(
    state_name: str, lease: str, candidates: list[str], holder_pod: str | None
) -> None:
    state = load(state_name)
    detail = run(state).details["leases"][lease]
    assert (detail["candidates"], detail["holder_pod"]) == (candidates, holder_pod)
    holder = state.one("Lease", lease.partition("/")[2])["spec"]["holderIdentity"]
    assert detail["holder"] == holder
    if holder_pod:  # client-go's `<hostname>_<uuid>`, the hostname being the pod's name
        assert holder.partition("_")[0] == holder_pod


def test_the_captured_theft_fails_for_its_whole_hour_then_as_expired() -> None:
    """The real theft: the manager's pods stay Running and Ready, the Lease looks fresh for an hour. Every run of
    that hour fails on the duration; once the hour (+ slack) is over it fails as not renewed."""
    state = load("lease_stolen_kruise")
    stolen_at = parse_time(state.one("Lease", "kruise-manager")["spec"]["renewTime"])
    assert stolen_at is not None
    for pod in (state.one("Pod", name) for name in KRUISE_LATER):
        assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"
    for minutes, line in [
        (
            1,
            "observed leaseDurationSeconds 3600 held by outpost-fault-thief (want <= 60 s: nobody would take over "
            "for 3600 s after its last renewal, 60 s ago)",
        ),
        (
            59,
            "observed leaseDurationSeconds 3600 held by outpost-fault-thief (want <= 60 s: nobody would take over "
            "for 3600 s after its last renewal, 3540 s ago)",
        ),
        (61, "observed renewTime 3660.0 s ago (want within 3600 s + 10 s slack); last holder outpost-fault-thief"),
    ]:
        result = run(state, stolen_at + timedelta(minutes=minutes), params=only("kruise-manager"))
        assert (result.status, result.errors) == (Status.FAILED, [f"lease kruise-system/kruise-manager: {line}"])


def test_the_captured_theft_in_a_cluster_allowing_its_duration_is_a_foreign_holder() -> None:
    """With the bound raised to the thief's 3600 s, what is left to see is a holder that is none of the pods."""
    result = run(load("lease_stolen_kruise"), params=LeaderLeasesParams(max_lease_duration_seconds=3600))
    assert result.status is Status.DEGRADED
    assert result.errors == [
        "lease kruise-system/kruise-manager: holder outpost-fault-thief is not a running candidate (no pod named "
        "outpost-fault-thief, nor a hostNetwork pod on node outpost-fault-thief); 2 candidate(s) "
        f"({', '.join(KRUISE_LATER)}) should take over"
    ]


# The holder forms client-go writes (`<hostname>_<uuid>`): the hostname is the pod's name, or with hostNetwork
# the node's. The pod is the captured holder of kruise-manager; `host_network` gives each pod a node of its own.
@pytest.mark.parametrize(
    ("holder", "on_host_network", "status", "holder_pod"),
    [
        ("{pod}_" + UUID, False, Status.OK, "{pod}"),
        ("{pod}_" + UUID, True, Status.OK, "{pod}"),
        ("{pod}", False, Status.OK, "{pod}"),  # no uuid: the whole identity is the hostname
        ("{node}_" + UUID, True, Status.OK, "{pod}"),
        ("{NODE}_" + UUID, True, Status.OK, "{pod}"),  # the kubelet lowercases the hostname into the Node name
        ("{node}_" + UUID, False, Status.DEGRADED, None),  # the node's hostname, but the pods have their own
        ("kwok-node-9_" + UUID, True, Status.DEGRADED, None),  # a host no candidate runs on
        ("kruise-controller-manager-cf4747b9-gone1_" + UUID, False, Status.DEGRADED, None),  # replaced pod
        ("outpost-fault-thief", False, Status.DEGRADED, None),  # a foreign holder within a normal duration
    ],
)
def test_holder_is_matched_by_pod_name_or_by_node_for_host_network_pods(
    holder: str, on_host_network: bool, status: Status, holder_pod: str | None
) -> None:
    state = load("healthy")
    pod = KRUISE_HEALTHY[1]
    objects = host_network(state.objects, KRUISE) if on_host_network else state.objects
    node = node_of(objects, pod)
    identity = holder.format(pod=pod, node=node, NODE=node.upper())
    result = run(state, objects=edited(objects, "kruise-manager", holderIdentity=identity))
    assert result.status is status, result.errors
    detail = result.details["leases"]["kruise-system/kruise-manager"]
    assert detail["holder_pod"] == (holder_pod.format(pod=pod) if holder_pod else None)
    if status is Status.DEGRADED:
        host = identity.rpartition("_")[0] or identity
        assert result.errors == [
            f"lease kruise-system/kruise-manager: holder {identity} is not a running candidate (no pod named {host}, "
            f"nor a hostNetwork pod on node {host}); 2 candidate(s) ({', '.join(KRUISE_HEALTHY)}) should take over"
        ]


@pytest.mark.parametrize(
    ("holder", "duration", "bound", "status"),
    [
        ("pod", 15, 60.0, Status.OK),  # every upstream Lease
        ("pod", 59, 60.0, Status.OK),
        ("pod", 60, 60.0, Status.OK),
        ("pod", 61, 60.0, Status.FAILED),  # the rightful holder too: a crash would go unnoticed for 61 s
        ("thief", 60, 60.0, Status.DEGRADED),  # a foreign holder within the bound: a failover is due
        ("thief", 61, 60.0, Status.FAILED),
        ("thief", 3600, 60.0, Status.FAILED),  # the Lease theft
        ("thief", 3600, 3600.0, Status.DEGRADED),  # a cluster that allows it: only the foreign holder is left to see
    ],
)
def test_a_lease_duration_over_the_bound_fails_on_its_own(
    holder: str, duration: int, bound: float, status: Status
) -> None:
    state = load("healthy")
    captured_holder = state.one("Lease", "kruise-manager")["spec"]["holderIdentity"]
    identity = captured_holder if holder == "pod" else "outpost-fault-thief"
    objects = edited(
        state.objects,
        "kruise-manager",
        holderIdentity=identity,
        leaseDurationSeconds=duration,
        renewTime=format_time(state.captured_at, micro=True),
    )
    result = run(state, params=LeaderLeasesParams(max_lease_duration_seconds=bound), objects=objects)
    assert result.status is status, result.errors
    assert result.details["leases"]["kruise-system/kruise-manager"]["lease_duration_seconds"] == duration
    if status is Status.FAILED:
        assert result.errors == [
            f"lease kruise-system/kruise-manager: observed leaseDurationSeconds {duration} held by {identity} "
            f"(want <= {bound:g} s: nobody would take over for {duration} s after its last renewal, 0 s ago)"
        ]


# Each captured Lease judged alone, `late` seconds after its own captured renewal (the real leaders renew at
# different moments, so one clock for all four would test their spread, not the bound).
@pytest.mark.parametrize("lease", ["koordinator-manager", "koord-scheduler", "koord-descheduler", "kruise-manager"])
@pytest.mark.parametrize(("late", "status"), [(24, Status.OK), (25, Status.OK), (26, Status.FAILED)])
def test_lateness_is_judged_against_duration_plus_slack(lease: str, late: int, status: Status) -> None:
    state = load("healthy")
    spec = state.one("Lease", lease)["spec"]
    renewed = parse_time(spec["renewTime"])
    assert renewed is not None
    result = run(state, renewed + timedelta(seconds=late), params=only(lease))
    namespace = KRUISE if lease == "kruise-manager" else KOORD
    assert (result.status, result.errors) == (
        status,
        []
        if status is Status.OK
        else [
            f"lease {namespace}/{lease}: observed renewTime 26.0 s ago {STEADY}; last holder {spec['holderIdentity']}"
        ],
    )


def test_clock_skew_a_renewal_up_to_10_s_in_the_future_is_fresh() -> None:
    state = load("healthy")
    result = run(state, state.captured_at - timedelta(seconds=5))
    assert result.status is Status.OK, result.errors
    assert result.details["leases"]["kruise-system/kruise-manager"]["renew_age_seconds"] < 0


@pytest.mark.parametrize("ahead", [timedelta(minutes=5), timedelta(days=365)])
def test_a_renewal_further_in_the_future_fails_naming_the_lease_and_how_far(ahead: timedelta) -> None:
    """A holder that stopped with a renewTime a year ahead would otherwise look alive for a year."""
    state = load("healthy")
    spec = state.one("Lease", "kruise-manager")["spec"]
    renewed = parse_time(spec["renewTime"])
    assert renewed is not None
    result = run(state, renewed - ahead, params=only("kruise-manager"))
    assert (result.status, result.errors) == (
        Status.FAILED,
        [
            f"lease {KRUISE}/kruise-manager: observed renewTime {ahead.total_seconds():.1f} s in the future (want at "
            f"most 10 s ahead of this probe's clock: a holder that stopped would hide until then); last holder "
            f"{spec['holderIdentity']}"
        ],
    )
    tolerant = only("kruise-manager").model_copy(update={"max_future_skew_seconds": 300})
    assert run(state, renewed - ahead, params=tolerant).status is (
        Status.OK if ahead <= timedelta(minutes=5) else Status.FAILED
    )


def unrenewable(app: str, holder: str) -> str:
    """The line for koordinator's Lease `app` in the healthy capture (renewed 1 s before) with no pod of `app`."""
    return (
        f"lease koordinator-system/{app}: no running pod matches koord-app={app} in koordinator-system, nobody can "
        f"renew it (last holder {holder}, renewed 1 s ago, expires within 24 s)"
    )


@pytest.mark.parametrize(
    ("kind", "name", "status", "line"),
    [
        pytest.param(
            "Pod",
            SCHEDULER,
            Status.FAILED,
            unrenewable("koord-scheduler", SCHEDULER_HOLDER),
            id="the-scheduler-without-a-running-pod-fails",
        ),
        pytest.param(
            "Pod",
            DESCHEDULER,
            Status.FAILED,
            unrenewable("koord-descheduler", f"{DESCHEDULER}_c2943626-b497-46c2-ae67-a5c7e950d0a2"),
            id="the-descheduler-without-a-running-pod-fails",
        ),
        # The Lease still names the deleted leader (KRUISE_HOLDER is its pod's) until it expires; the other replica
        # should take over.
        pytest.param(
            "Pod",
            KRUISE_HEALTHY[1],
            Status.DEGRADED,
            f"lease kruise-system/kruise-manager: holder {KRUISE_HOLDER} is not a running candidate (no pod named "
            f"{KRUISE_HEALTHY[1]}, nor a hostNetwork pod on node {KRUISE_HEALTHY[1]}); 1 candidate(s) "
            f"({KRUISE_HEALTHY[0]}) should take over",
            id="the-leader-pod-deleted-while-the-other-replica-runs-is-degraded",
        ),
        pytest.param(
            "Lease",
            "koord-descheduler",
            Status.FAILED,
            "lease koordinator-system/koord-descheduler: not found (want a held leader Lease)",
            id="an-absent-lease-is-named",
        ),
    ],
)
def test_the_healthy_capture_less_one_object(kind: str, name: str, status: Status, line: str) -> None:
    state = load("healthy")
    result = run(state, objects=without(state.objects, kind, name))
    assert (result.status, result.errors) == (status, [line])


def test_fetch_keeps_name_node_and_host_network_of_running_non_terminating_candidates_only() -> None:
    state = load("healthy")
    objects = host_network(state.objects, KRUISE)
    leaving, finished = (
        next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == name) for name in KOORD_MANAGERS
    )
    leaving["metadata"]["deletionTimestamp"] = "2026-12-04T18:04:40Z"
    finished["status"]["phase"] = "Failed"
    with fake_cluster(FakeApiServer().add_all(objects)) as cluster:
        data = leader_leases.fetch(cluster, PARAMS)
    assert data.candidates[(KOORD, "koord-app=koord-manager")] == []
    assert data.candidates[(KRUISE, "control-plane=controller-manager")] == [
        Candidate(KRUISE_HEALTHY[0], "outpost-sandbox-node-0", host_network=True),
        Candidate(KRUISE_HEALTHY[1], "outpost-sandbox-node-1", host_network=True),
    ]
    assert data.candidates[(KOORD, "koord-app=koord-scheduler")] == [
        Candidate(SCHEDULER, "outpost-sandbox-node", host_network=False)
    ]


@pytest.mark.parametrize(
    ("spec", "line"),
    [
        ({"holderIdentity": None}, "not held (last renewed 1 s ago; want a holder renewing it)"),
        ({"holderIdentity": None, "renewTime": None}, "not held (never renewed; want a holder renewing it)"),
        (
            {"leaseDurationSeconds": None},
            f"no leaseDurationSeconds (last holder {SCHEDULER_HOLDER}; want renewals within its duration)",
        ),
        ({"renewTime": None}, f"no renewTime (last holder {SCHEDULER_HOLDER}; want renewals within its duration)"),
    ],
)
def test_omitted_fields_fail(spec: dict[str, Any], line: str) -> None:
    state = load("healthy")
    result = run(state, objects=edited(state.objects, "koord-scheduler", **spec))
    assert result.status is Status.FAILED
    assert result.errors == [f"lease koordinator-system/koord-scheduler: {line}"]


def test_several_problems_are_each_named_and_the_worst_wins() -> None:
    """The captured kruise-manager outage (failed) while koord-scheduler's Lease names a replaced pod (degraded)."""
    state = load("manager_down_kruise")
    gone = f"koord-scheduler-84f47756f8-gone1_{UUID}"
    result = run(state, objects=edited(state.objects, "koord-scheduler", holderIdentity=gone))
    assert result.status is Status.FAILED
    assert result.summary.startswith(
        f"2 of 4 leader leases unhealthy: lease koordinator-system/koord-scheduler: "
        f"holder {gone} is not a running candidate"
    )
    assert [line.split(":")[0] for line in result.errors] == [
        "lease koordinator-system/koord-scheduler",
        "lease kruise-system/kruise-manager",
    ]
    assert [v["status"] for v in result.details["leases"].values()] == ["ok", "degraded", "ok", "failed"]


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
    state = load("healthy")  # for clusters whose holders cannot be matched to pods (`--hostname-override`)
    params = LeaderLeasesParams(leases=[LeaderLease(name="koord-scheduler", namespace=KOORD)])
    api = FakeApiServer().add_all(state.objects)
    with fake_cluster(api) as cluster:
        data = leader_leases.fetch(cluster, params)
    assert data.candidates == {}
    result = leader_leases.evaluate(data, params, state.captured_at)
    assert result.status is Status.OK
    assert "candidates" not in result.details["leases"]["koordinator-system/koord-scheduler"]
    assert not any(r.path.endswith("/pods") for r in api.requests)


@pytest.mark.parametrize(
    "bad",
    [
        {"leases": []},
        {"leases": [{"name": "x", "namespace": "y", "holder_selector": ""}]},
        {"leases": [{"name": "x", "namespace": "y", "holder_selector": "a in ("}]},
        {"leases": [{"name": "x"}]},
        {"slack_seconds": -1},
        {"max_lease_duration_seconds": 0},
    ],
)
def test_bad_params_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        LeaderLeasesParams.model_validate(bad)


# The stale Lease's next step finds the holder's pod whether the holder names it (its own hostname) or its node
# (`manager.hostNetwork: true`, both charts; false by default): the Lease (`-o wide`: its holder) beside the pods
# (`-o wide`: NAME and NODE columns, whichever the holder names). Its logs are the matched candidate's.
@pytest.mark.parametrize(
    ("holder", "on_host_network", "logs_of"),
    [
        pytest.param("{pod}", False, "{pod}", id="pod-network-holder-is-the-pod-name"),
        pytest.param("{node}", True, "{pod}", id="host-network-holder-is-the-node-name"),
        pytest.param("{NODE}", True, "{pod}", id="host-network-holder-in-capitals"),
        pytest.param("kruise-controller-manager-cf4747b9-gone1", False, "<holder_pod>", id="holder-pod-gone"),
    ],
)
def test_a_stale_lease_points_at_its_holders_pod_by_name_or_by_node(
    holder: str, on_host_network: bool, logs_of: str
) -> None:
    state = load("healthy")
    pod = KRUISE_HEALTHY[1]
    objects = host_network(state.objects, KRUISE) if on_host_network else state.objects
    node = node_of(objects, pod)
    host = holder.format(pod=pod, node=node, NODE=node.upper())
    objects = edited(objects, "kruise-manager", holderIdentity=f"{host}_{UUID}")
    renewed = parse_time(state.one("Lease", "kruise-manager")["spec"]["renewTime"])
    assert renewed is not None
    result = run(state, renewed + timedelta(seconds=60), params=only("kruise-manager"), objects=objects)
    assert result.status is Status.FAILED, result.errors
    [step] = result.next_steps
    assert (step.failure, step.command, step.see) == (
        "lease-stale",
        "kubectl -n kruise-system get lease kruise-manager -o wide && "
        "kubectl -n kruise-system get pods -l 'control-plane=controller-manager' -o wide",
        f"kubectl -n kruise-system logs {logs_of.format(pod=pod)} --tail=200",
    )


def test_a_stale_lease_without_a_holder_selector_lists_every_pod_of_its_namespace() -> None:
    """No `holder_selector`: `-l ''` is no selector to kubectl (k8s.io/cli-runtime LabelSelectorParam trims it)."""
    state = load("healthy")
    renewed = parse_time(state.one("Lease", "kruise-manager")["spec"]["renewTime"])
    assert renewed is not None
    params = LeaderLeasesParams(leases=[LeaderLease(name="kruise-manager", namespace=KRUISE)])
    result = run(state, renewed + timedelta(seconds=60), params=params)
    [step] = result.next_steps
    assert step.command == (
        "kubectl -n kruise-system get lease kruise-manager -o wide && kubectl -n kruise-system get pods -l '' -o wide"
    )
    assert step.see == "kubectl -n kruise-system logs <holder_pod> --tail=200"
