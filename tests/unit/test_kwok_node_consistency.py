"""kwok-node-consistency over captured sandbox nodes and node Leases: healthy; node-lease-stale (the
Lease taken over by a foreign holder for 86400 s, caught on the first run by the 600 s duration
bound); kwok-down right after the stop (nothing is visible yet: every Lease was renewed seconds ago)
and once the Leases are past their own duration; the Lease durations of kwok, kwokctl and the
sandbox's size tiers all passing the default bound; a hand-built real cluster (kubelet nodes never
judged); NotReady nodes, missing Leases, Leases without renewTime, clock skew, selection by label or
annotation, nodes not selected never judged, zero selected."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from kit import fake_cluster
from kit.node_fixtures import captured_at, document, serve
from kit.results import failures
from outpost.checks import kwok_node_consistency
from outpost.checks.kwok_node_consistency import KwokNodeConsistencyParams, KwokNodeData
from outpost.kube.nodes import facts_of
from outpost.kube.objects import Lease, parse
from outpost.result import Result, Status


def data(
    state: str, nodes: list[dict[str, Any]] | None = None, leases: list[dict[str, Any]] | None = None
) -> KwokNodeData:
    return KwokNodeData(
        tuple(facts_of(n) for n in (nodes if nodes is not None else document(state, "nodes"))),
        tuple(parse(Lease, item, "t") for item in (leases if leases is not None else document(state, "node_leases"))),
    )


def run(d: KwokNodeData, state: str = "healthy", skew: float = 0, **params: Any) -> Result:
    return kwok_node_consistency.evaluate(
        d, KwokNodeConsistencyParams(**params), captured_at(state) + timedelta(seconds=skew)
    )


def test_healthy_sandbox_is_ok() -> None:
    result = run(data("healthy"))
    assert result.status is Status.OK, result.errors
    assert result.summary == "all 5 KWOK fake nodes Ready with their Leases renewed in time"
    assert result.details["selector"] == "annotation kwok.x-k8s.io/node=fake"


def test_node_lease_stale_fault_is_caught_on_the_first_run_by_the_duration_bound() -> None:
    d = data("node-lease-stale")
    lease = next(lease for lease in d.leases if lease.name == "kwok-node-0")
    assert lease.spec.lease_duration_seconds == 86400  # how the fault makes kwok let go (module docstring)
    assert not lease.expired(captured_at("node-lease-stale"))  # by its own duration it looks alive
    result = run(d, "node-lease-stale")
    assert result.status is Status.FAILED
    assert result.errors == [
        "lease kube-node-lease/kwok-node-0: observed leaseDurationSeconds 86400, holder outpost-sandbox-fault "
        "(want <= 600 s: a holder that stopped renewing would look alive for 86400 s)"
    ]
    assert failures(result) == ["lease-too-long"]
    assert result.next_steps[0].command == "kubectl -n kube-node-lease get lease kwok-node-0 -o yaml"
    # ... and once 600 s have passed without renewal it is stale as well
    later = run(d, "node-lease-stale", skew=600)
    assert any(
        e.startswith("lease kube-node-lease/kwok-node-0: observed renewTime")
        and "(want within 600 s, max_lease_duration_seconds)" in e
        for e in later.errors
    )


def leases_of(duration: int, renewed_seconds_ago: float) -> list[dict[str, Any]]:
    """The healthy sandbox's Leases as an install with `duration`-second node Leases shows them."""
    leases: list[dict[str, Any]] = copy.deepcopy(document("healthy", "node_leases"))
    renewed = captured_at("healthy") - timedelta(seconds=renewed_seconds_ago)
    for lease in leases:
        lease["spec"]["leaseDurationSeconds"] = duration
        lease["spec"]["renewTime"] = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return leases


@pytest.mark.parametrize(
    ("duration", "renewed_ago", "status"),
    [
        (40, 9, Status.OK),  # kwok in-cluster (kustomize/kwok/kwok.yaml), the sandbox's first tier
        (40, 41, Status.FAILED),  # ... and kwok stopped 41 s ago
        (160, 39, Status.OK),  # the sandbox's 2,000-node tier
        (200, 49, Status.OK),  # kwokctl: 40 s x heartbeatFactor 5, renewed every 50 s
        (200, 201, Status.FAILED),  # ... and kwok stopped
        (400, 99, Status.OK),  # the sandbox's 5,000-node tier
        (600, 149, Status.OK),  # the bound itself
        (601, 1, Status.FAILED),  # past it: named although just renewed
        (86400, 1, Status.FAILED),  # the foreign holder's day
    ],
)
def test_lease_durations_of_real_installs_pass_the_default_bound(
    duration: int, renewed_ago: float, status: Status
) -> None:
    result = run(data("healthy", leases=leases_of(duration, renewed_ago)))
    assert result.status is status, result.errors
    assert result.details["long_lease_count"] == (5 if duration > 600 else 0)


def test_kwok_down_is_invisible_right_after_the_stop_and_caught_after_the_lease_duration() -> None:
    first = run(data("kwok-down-first-run"), "kwok-down-first-run")
    assert first.status is Status.OK  # the truth: Leases renewed ~1 s before, nodes Ready
    result = run(data("kwok-down-after-lease-duration"), "kwok-down-after-lease-duration")
    assert result.status is Status.FAILED
    assert result.details["stale_lease_count"] == 5
    assert result.errors[0].startswith("lease kube-node-lease/kwok-node-0: observed renewTime 41.4 s ago, holder vm_")
    assert result.errors[0].endswith("(want within 40 s, its leaseDurationSeconds)")
    assert failures(result) == ["lease-stale"] * 5
    assert result.next_steps[0].command == "kubectl -n kube-node-lease get lease kwok-node-0 -o yaml"


def test_not_ready_missing_and_timeless() -> None:
    nodes = copy.deepcopy(document("healthy", "nodes"))
    nodes[1]["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]
    del nodes[2]["status"]["conditions"]
    leases = copy.deepcopy(document("healthy", "node_leases"))
    del leases[3]["spec"]["renewTime"]
    del leases[4]["spec"]["leaseDurationSeconds"]
    result = run(data("healthy", nodes=nodes, leases=[lease for i, lease in enumerate(leases) if i != 0]))
    assert result.status is Status.FAILED
    assert result.errors[:2] == [
        "node kwok-node-1: observed Ready=Unknown (NodeStatusUnknown) (want Ready=True)",
        "node kwok-node-2: observed no Ready condition (want Ready=True)",
    ]
    assert "lease kube-node-lease/kwok-node-0: absent (want a node Lease renewed within its duration)" in result.errors
    assert any(e.startswith("lease kube-node-lease/kwok-node-3: observed no renewTime") for e in result.errors)
    assert any(
        e.startswith("lease kube-node-lease/kwok-node-4: observed no leaseDurationSeconds") for e in result.errors
    )
    assert result.summary.startswith("KWOK fake nodes (5): 2 not Ready (kwok-node-1, kwok-node-2); ")
    assert failures(result) == ["node-not-ready", "node-not-ready", "lease-absent", "lease-stale", "lease-too-long"]
    assert [step.command for step in result.next_steps[:3]] == [
        "kubectl describe node kwok-node-1",
        "kubectl describe node kwok-node-2",
        "kubectl describe node kwok-node-0",
    ]


@pytest.mark.parametrize(
    ("skew", "status"), [(-600, Status.FAILED), (-10, Status.OK), (20, Status.OK), (40, Status.FAILED)]
)
def test_clock_skew(skew: float, status: Status) -> None:
    # healthy Leases were renewed 0.5-10 s before capture: a renewal up to 10 s "in the future" is clock skew and
    # fresh; 600 s ahead is no clock's error, and a holder that stopped would hide until then
    assert run(data("healthy"), skew=skew).status is status


def test_a_renewal_a_day_ahead_is_stale_and_named() -> None:
    leases = copy.deepcopy(document("healthy", "node_leases"))
    leases[0]["spec"]["renewTime"] = "2026-12-04T13:30:14.053210Z"  # a day after the capture
    result = run(data("healthy", leases=leases))
    assert result.status is Status.FAILED
    line = next(e for e in result.errors if "in the future" in e)
    assert line.startswith(f"lease kube-node-lease/{leases[0]['metadata']['name']}: observed renewTime 86")
    assert line.endswith(
        "s in the future, holder " + leases[0]["spec"]["holderIdentity"] + " (want at most 10 s "
        "ahead of this probe's clock: a holder that stopped would hide until then)"
    )


def test_only_selected_nodes_are_judged() -> None:
    nodes = copy.deepcopy(document("kwok-down-after-lease-duration", "nodes"))
    real = copy.deepcopy(nodes[0])
    real["metadata"] = {"name": "real-1", "labels": {"type": "kwok"}}  # kwokctl's label, not the annotation
    real["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    d = data("healthy", nodes=[*document("healthy", "nodes"), real])
    assert run(d).status is Status.OK  # real-1 is NotReady and has no Lease, but is not a fake node
    by_label = run(d, selector={"source": "label", "key": "type", "value": "kwok"})
    assert by_label.status is Status.FAILED
    assert any("node real-1" in e for e in by_label.errors)


def test_real_cluster_judges_only_the_fake_nodes() -> None:
    result = run(data("real-cluster"), "real-cluster")
    assert result.status is Status.OK, result.errors
    assert result.details["selected"] == 2
    assert result.details["nodes_read"] == 4
    assert result.summary == "all 2 KWOK fake nodes Ready with their Leases renewed in time"


def test_zero_selected_is_error_unless_allowed() -> None:
    params: dict[str, Any] = {"selector": {"source": "label", "key": "kwok.x-k8s.io/node", "value": "fake"}}
    result = run(data("healthy"), **params)  # the tutorial's label selector selects nothing
    assert result.status is Status.ERROR
    assert result.summary.startswith("nodes: none selected by label kwok.x-k8s.io/node=fake (5 nodes read)")
    assert failures(result) == ["no-fake-nodes"]
    assert result.next_steps[0].command == "kubectl get nodes -o wide --show-labels"
    assert run(data("healthy"), allow_no_nodes=True, **params).status is Status.OK


def test_selector_params_refuse_bad_input() -> None:
    with pytest.raises(ValueError, match="'label' or 'annotation'"):
        KwokNodeConsistencyParams.model_validate({"selector": {"source": "field", "key": "a"}})
    with pytest.raises(ValueError, match="invalid label key"):
        KwokNodeConsistencyParams.model_validate({"selector": {"source": "label", "key": "bad key"}})


def test_fetch_over_kit_label_selector_goes_to_the_server() -> None:
    api = serve("node-lease-stale")
    with fake_cluster(api, page_size=2) as cluster:
        fetched = kwok_node_consistency.fetch(cluster, KwokNodeConsistencyParams())
        assert run(fetched, "node-lease-stale").status is Status.FAILED
        kwok_node_consistency.fetch(
            cluster,
            KwokNodeConsistencyParams.model_validate({"selector": {"source": "label", "key": "type", "value": "kwok"}}),
        )
    node_lists = [r for r in api.requests if r.path == "/api/v1/nodes"]
    assert {r.param("labelSelector") for r in node_lists} == {None, "type=kwok"}
    assert any(r.path == "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases" for r in api.requests)


def test_past_ten_per_kind_the_rest_are_counted_with_a_step_over_all_of_them() -> None:
    template_node = document("healthy", "nodes")[0]
    template_lease = document("kwok-down-after-lease-duration", "node_leases")[0]
    names = [f"kwok-node-{i:02d}" for i in range(12)]
    nodes = [copy.deepcopy(template_node) | {"metadata": {**template_node["metadata"], "name": n}} for n in names]
    for node in nodes:
        node["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]
    leases = [copy.deepcopy(template_lease) | {"metadata": {**template_lease["metadata"], "name": n}} for n in names]
    result = run(data("healthy", nodes=nodes, leases=leases), "kwok-down-after-lease-duration")
    assert result.errors[10] == "2 more nodes not Ready (12 in all)"
    assert result.errors[-1] == "2 more stale node Leases (12 in all)"
    steps = failures(result)
    assert steps == ["node-not-ready"] * 10 + ["many-not-ready"] + ["lease-stale"] * 10 + ["many-leases-stale"]
    assert result.next_steps[-1].command.startswith("kubectl -n kube-node-lease get leases -o custom-columns=")
