"""nodemetric-freshness over captured sandbox NodeMetrics: healthy, the nodemetric-stale fault, and
variations (missing, no updateTime, clock skew, nodes not selected, many stale); fetch over the kit."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from kit import fake_cluster
from kit.node_fixtures import captured_at, document, serve
from outpost.checks import nodemetric_freshness
from outpost.checks.nodemetric_freshness import NodeMetricFreshnessData, NodeMetricFreshnessParams
from outpost.kube.nodes import facts_of, usage_from_nodemetric
from outpost.result import Result, Status


def data(state: str, metrics: list[dict[str, Any]] | None = None,
         nodes: list[dict[str, Any]] | None = None) -> NodeMetricFreshnessData:
    return NodeMetricFreshnessData(
        tuple(facts_of(n) for n in (nodes if nodes is not None else document(state, "nodes"))),
        tuple(usage_from_nodemetric(m) for m in (metrics if metrics is not None else document(state, "nodemetrics"))))


def run(d: NodeMetricFreshnessData, state: str = "healthy", skew: float = 0, **params: Any) -> Result:
    return nodemetric_freshness.evaluate(d, NodeMetricFreshnessParams(**params),
                                         captured_at(state) + timedelta(seconds=skew))


def test_healthy_sandbox_is_ok() -> None:
    result = run(data("healthy"))
    assert result.status is Status.OK, result.errors
    assert result.details["fresh"] == 5
    assert result.summary.startswith("NodeMetrics of all 5 selected nodes updated within 300 s")


def test_nodemetric_stale_fault_names_the_node() -> None:
    result = run(data("nodemetric-stale"), "nodemetric-stale")
    assert result.status is Status.FAILED
    assert len(result.errors) == 1
    assert result.errors[0].startswith("nodemetric kwok-node-0: observed updateTime 6")  # backdated 600 s
    assert result.errors[0].endswith("s ago (want within 300 s)")
    assert result.details["stale"] == ["kwok-node-0"]


@pytest.mark.parametrize(
    ("skew", "status"),
    [(-3600, Status.OK),   # our clock an hour behind: reports from "the future" are fresh, noted in details
     (270, Status.OK), (300, Status.FAILED)],  # the healthy reports were 9 s old when captured
)
def test_clock_skew(skew: float, status: Status) -> None:
    result = run(data("healthy"), skew=skew)
    assert result.status is status
    if skew < 0:
        assert len(result.details["future_update_time"]) == 5


def test_missing_and_timeless_nodemetrics_are_named() -> None:
    metrics = copy.deepcopy(document("healthy", "nodemetrics"))
    del metrics[1]["status"]["updateTime"]
    result = run(data("healthy", metrics=metrics[1:]))
    assert result.status is Status.FAILED
    assert result.errors == ["nodemetric kwok-node-1: observed no status.updateTime (want within 300 s)",
                             "nodemetric kwok-node-0: absent for node kwok-node-0 (want one per selected node)"]
    assert result.details["missing"] == ["kwok-node-0"]


def test_nodemetrics_of_unselected_nodes_are_ignored_and_no_selection_is_error() -> None:
    metrics = copy.deepcopy(document("nodemetric-stale", "nodemetrics"))
    metrics.append({"metadata": {"name": "gone-node"}, "status": {"updateTime": "2020-01-01T00:00:00Z"}})
    nodes = document("nodemetric-stale", "nodes")[1:]  # kwok-node-0 (the stale one) is no longer a node
    assert run(data("nodemetric-stale", metrics=metrics, nodes=nodes), "nodemetric-stale").status is Status.OK
    result = run(data("healthy"), nodes={"classes": ["real"]})
    assert result.status is Status.ERROR
    assert result.summary.startswith("no node selected (real nodes; 5 nodes read")


def test_many_stale_first_ten_named() -> None:
    template = document("nodemetric-stale", "nodemetrics")[0]
    node = document("healthy", "nodes")[0]
    metrics = [copy.deepcopy(template) | {"metadata": {"name": f"n{i:02d}"}} for i in range(12)]
    nodes = [copy.deepcopy(node) | {"metadata": {**node["metadata"], "name": f"n{i:02d}"}} for i in range(12)]
    result = run(data("nodemetric-stale", metrics=metrics, nodes=nodes), "nodemetric-stale")
    assert len(result.errors) == 11
    assert result.errors[-1] == "nodemetrics: 2 more stale (12 in all)"
    assert "(+2 more, 12 in all)" in result.summary


def test_fetch_pages_nodemetrics_with_their_own_page_size() -> None:
    api = serve("nodemetric-stale")
    with fake_cluster(api) as cluster:
        fetched = nodemetric_freshness.fetch(cluster, NodeMetricFreshnessParams(page_size=2))
    assert run(fetched, "nodemetric-stale").errors[0].startswith("nodemetric kwok-node-0")
    pages = [r for r in api.requests if r.path == "/apis/slo.koordinator.sh/v1alpha1/nodemetrics"]
    assert len(pages) == 3
    assert all(r.param("limit") == "2" for r in pages)
