"""nodemetric-freshness over captured sandbox NodeMetrics (all nodes KWOK fake nodes whose stand-in
koordlet reports, so fake nodes are opted in as the sandbox's environment does): healthy, the
nodemetric-stale fault, and variations (missing, no updateTime, clock skew against the 180 s expiry,
nodes not selected, many stale); a hand-built real cluster where koord-manager's NodeMetrics of the
fake nodes carry no status (no koordlet), left out by default; fetch over the kit."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from kit import fake_cluster
from kit.node_fixtures import captured_at, document, facts_and_usage, serve
from kit.results import failures
from outpost.checks import nodemetric_freshness
from outpost.checks.nodemetric_freshness import NodeMetricFreshnessData, NodeMetricFreshnessParams
from outpost.result import Result, Status

SANDBOX: dict[str, Any] = {"nodes": {"classes": ["real", "fake"]}}  # what the sandbox's environment opts into


def data(
    state: str, metrics: list[dict[str, Any]] | None = None, nodes: list[dict[str, Any]] | None = None
) -> NodeMetricFreshnessData:
    return NodeMetricFreshnessData(*facts_and_usage(state, metrics, nodes))


def run(d: NodeMetricFreshnessData, state: str = "healthy", skew: float = 0, **params: Any) -> Result:
    return nodemetric_freshness.evaluate(
        d, NodeMetricFreshnessParams(**params), captured_at(state) + timedelta(seconds=skew)
    )


def test_healthy_sandbox_is_ok() -> None:
    result = run(data("healthy"), **SANDBOX)
    assert result.status is Status.OK, result.errors
    assert result.details["fresh"] == 5
    assert result.summary.startswith("NodeMetrics of all 5 selected nodes updated within 180 s")


def test_nodemetric_stale_fault_names_the_node() -> None:
    result = run(data("nodemetric-stale"), "nodemetric-stale", **SANDBOX)
    assert result.status is Status.FAILED
    assert len(result.errors) == 1
    assert result.errors[0].startswith("nodemetric kwok-node-0: observed updateTime 6")  # backdated 600 s
    assert result.errors[0].endswith("s ago (want within 180 s)")
    assert result.details["stale"] == ["kwok-node-0"]
    assert failures(result) == ["nodemetric-stale"]
    assert result.next_steps[0].command == (
        "kubectl get nodemetrics.slo.koordinator.sh kwok-node-0 -o wide && kubectl -n koordinator-system get pods "
        "-l koord-app=koordlet -o wide --field-selector spec.nodeName=kwok-node-0"
    )


@pytest.mark.parametrize(
    ("skew", "params", "status"),
    [
        (-30, {}, Status.OK),  # reports up to 30 s ahead of our clock (skew; 9.2 s old at capture): fresh
        (-3600, {}, Status.FAILED),  # an hour ahead: no clock is that far off, and a stopped koordlet would hide
        (-200, {"max_future_skew_seconds": 300}, Status.OK),
        (170, {}, Status.OK),
        (175, {}, Status.FAILED),  # the healthy reports were 9.2 s old when captured
        (290, {"expiry_seconds": 300}, Status.OK),
        (295, {"expiry_seconds": 300}, Status.FAILED),
    ],  # the shipped 300 s
)
def test_clock_skew_and_expiry(skew: float, params: dict[str, Any], status: Status) -> None:
    result = run(data("healthy"), skew=skew, **SANDBOX, **params)
    assert result.status is status
    if skew < 0:
        ahead = status is Status.FAILED
        assert len(result.details["future_update_time"]) == (5 if ahead else 0)
        assert result.details["stale_count"] == (5 if ahead else 0)


def test_an_update_time_far_in_the_future_is_named_stale() -> None:
    result = run(data("healthy"), skew=-86400, **SANDBOX)
    assert result.status is Status.FAILED
    assert result.errors[0].startswith("nodemetric kwok-node-0: observed updateTime 863")
    assert result.errors[0].endswith(" s in the future (at most 30 s ahead of this probe's clock) (want within 180 s)")
    assert failures(result) == ["nodemetric-ahead"] * 5
    assert result.next_steps[0].command == "kubectl get nodemetrics.slo.koordinator.sh kwok-node-0 -o yaml"


@pytest.mark.parametrize(
    ("params", "status", "errors", "fresh"),
    [
        # default: the real nodes, both reported by koordlet
        ({}, Status.OK, [], 2),
        # fake nodes opted in on a real cluster: koord-manager made their NodeMetrics, nobody fills the status
        (
            {"nodes": {"classes": ["real", "fake"]}},
            Status.FAILED,
            [
                f"nodemetric kwok-node-{i}: observed no status.updateTime, koordlet has not reported (want within 180 "
                f"s)"
                for i in (0, 1)
            ],
            2,
        ),
    ],
)
def test_real_cluster_fake_nodes_never_fresh_so_left_out_by_default(
    params: dict[str, Any], status: Status, errors: list[str], fresh: int
) -> None:
    result = run(data("real-cluster"), "real-cluster", **params)
    assert result.status is status
    assert result.errors == errors
    assert result.details["fresh"] == fresh
    if not params:
        assert result.summary == "NodeMetrics of all 2 selected nodes updated within 180 s (oldest 48 s)"


def test_missing_and_timeless_nodemetrics_are_named() -> None:
    metrics = copy.deepcopy(document("healthy", "nodemetrics"))
    del metrics[1]["status"]["updateTime"]
    result = run(data("healthy", metrics=metrics[1:]), **SANDBOX)
    assert result.status is Status.FAILED
    assert result.errors == [
        "nodemetric kwok-node-1: observed no status.updateTime, koordlet has not reported (want within 180 s)",
        "nodemetric kwok-node-0: absent for node kwok-node-0 (want one per selected node)",
    ]
    assert result.details["missing"] == ["kwok-node-0"]
    assert failures(result) == ["nodemetric-stale", "nodemetric-absent"]
    assert result.next_steps[1].command.startswith("kubectl get node kwok-node-0 -o wide && ")


def test_nodemetrics_of_unselected_nodes_are_ignored_and_no_selection_is_error() -> None:
    metrics = copy.deepcopy(document("nodemetric-stale", "nodemetrics"))
    metrics.append({"metadata": {"name": "gone-node"}, "status": {"updateTime": "2020-01-01T00:00:00Z"}})
    nodes = document("nodemetric-stale", "nodes")[1:]  # kwok-node-0 (the stale one) is no longer a node
    assert (
        run(data("nodemetric-stale", metrics=metrics, nodes=nodes), "nodemetric-stale", **SANDBOX).status is Status.OK
    )
    result = run(data("healthy"))  # the sandbox's nodes are all fake: the defaults select none
    assert result.status is Status.ERROR
    assert result.summary == (
        "no node selected (real nodes; 5 nodes read, excluded: 5 class fake not selected); "
        "KWOK fake nodes are left out by default (no agent runs on them); to judge them, set "
        "nodes.classes to [real, fake]"
    )
    assert failures(result) == ["nothing-selected"]
    assert result.next_steps[0].command == "kubectl get nodes -o wide --show-labels"


def test_many_stale_first_ten_named() -> None:
    template = document("nodemetric-stale", "nodemetrics")[0]
    node = document("healthy", "nodes")[0]
    metrics = [copy.deepcopy(template) | {"metadata": {"name": f"n{i:02d}"}} for i in range(12)]
    nodes = [copy.deepcopy(node) | {"metadata": {**node["metadata"], "name": f"n{i:02d}"}} for i in range(12)]
    result = run(data("nodemetric-stale", metrics=metrics, nodes=nodes), "nodemetric-stale", **SANDBOX)
    assert len(result.errors) == 11
    assert result.errors[-1] == "nodemetrics: 2 more stale (12 in all)"
    assert failures(result) == ["nodemetric-stale"] * 10 + ["many-stale"]
    assert "kubectl get nodemetrics.slo.koordinator.sh -o wide" in result.next_steps[-1].command
    assert "(+2 more, 12 in all)" in result.summary


def test_fetch_pages_nodemetrics_with_their_own_page_size() -> None:
    api = serve("nodemetric-stale")
    with fake_cluster(api) as cluster:
        fetched = nodemetric_freshness.fetch(cluster, NodeMetricFreshnessParams(page_size=2))
    assert run(fetched, "nodemetric-stale", **SANDBOX).errors[0].startswith("nodemetric kwok-node-0")
    pages = [r for r in api.requests if r.path == "/apis/slo.koordinator.sh/v1alpha1/nodemetrics"]
    assert len(pages) == 3
    assert all(r.param("limit") == "2" for r in pages)
