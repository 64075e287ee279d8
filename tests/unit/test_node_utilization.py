"""node-utilization over captured sandbox NodeMetrics: healthy (62 %), the node-utilization-low (20 %)
and -high (90 %) faults, stale reports left out, no usable report (error), metrics.k8s.io reports,
band parameters; fetch over the kit, and the metrics API not served."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from kit import fake_cluster
from kit.node_fixtures import captured_at, document, serve
from outpost.checks import node_utilization
from outpost.checks.node_utilization import NodeUtilizationData, NodeUtilizationParams
from outpost.errors import ClusterResponseError
from outpost.kube.nodes import facts_of, usage_from_metrics_k8s, usage_from_nodemetric
from outpost.result import Result, Status


def data(state: str, metrics: list[dict[str, Any]] | None = None,
         nodes: list[dict[str, Any]] | None = None) -> NodeUtilizationData:
    return NodeUtilizationData(
        tuple(facts_of(n) for n in (nodes if nodes is not None else document(state, "nodes"))),
        tuple(usage_from_nodemetric(m) for m in (metrics if metrics is not None else document(state, "nodemetrics"))))


def run(d: NodeUtilizationData, state: str = "healthy", skew: float = 0, **params: Any) -> Result:
    return node_utilization.evaluate(d, NodeUtilizationParams(**params), captured_at(state) + timedelta(seconds=skew))


@pytest.mark.parametrize(
    ("state", "status", "mean", "text"),
    [
        ("healthy", Status.OK, 62.0, "mean CPU utilisation of 5 nodes (NodeMetric) 62.0 %, inside 60 to 65 %"),
        ("node-utilization-low", Status.FAILED, 20.0,
         "nodes: observed mean CPU utilisation of 5 nodes (NodeMetric) 20.0 % (want 60 to 65 %); below the band"),
        ("node-utilization-high", Status.FAILED, 90.0,
         "nodes: observed mean CPU utilisation of 5 nodes (NodeMetric) 90.0 % (want 60 to 65 %); above the band"),
    ],
)
def test_captured_states(state: str, status: Status, mean: float, text: str) -> None:
    result = run(data(state), state)
    assert result.status is status, result.errors
    assert result.details["mean_percent"] == mean
    assert (result.summary if status is Status.OK else result.errors[0]).startswith(text)
    if status is Status.FAILED:
        assert "kwok-node-0 " in result.errors[0]  # the extreme nodes are named


def test_band_is_configurable_and_checked() -> None:
    assert run(data("node-utilization-high"), "node-utilization-high", upper_percent=95).status is Status.OK
    assert run(data("healthy"), lower_percent=63).status is Status.FAILED
    with pytest.raises(ValidationError):
        NodeUtilizationParams(lower_percent=70, upper_percent=65)


def test_stale_reports_are_left_out_and_counted() -> None:
    result = run(data("nodemetric-stale"), "nodemetric-stale")
    assert result.status is Status.OK
    assert result.details["sampled"] == 4
    assert result.details["left_out"] == {"stale report": {"count": 1, "first": ["kwok-node-0"]}}


def test_no_usable_report_is_error() -> None:
    everything_stale = run(data("healthy"), skew=3600)
    assert everything_stale.status is Status.ERROR
    assert everything_stale.summary == "no usable NodeMetric CPU report for any of 5 selected nodes (5 stale report)"
    no_cpu = copy.deepcopy(document("healthy", "nodemetrics"))
    for metric in no_cpu:
        del metric["status"]["nodeMetric"]
    assert run(data("healthy", metrics=no_cpu)).summary.endswith("(5 no cpu usage)")
    assert run(data("healthy", metrics=[])).summary.endswith("(5 no report)")
    nodes = copy.deepcopy(document("healthy", "nodes"))
    for node in nodes:
        node["status"]["allocatable"] = {}
    assert run(data("healthy", nodes=nodes)).summary.endswith("(5 no allocatable cpu)")
    assert run(data("healthy"), nodes={"classes": ["virtual"]}).status is Status.ERROR


def test_metrics_k8s_source() -> None:
    nodes = tuple(facts_of(n) for n in document("healthy", "nodes"))
    samples = tuple(usage_from_metrics_k8s({"metadata": {"name": n.name}, "timestamp": "2026-12-03T13:30:10Z",
                                            "window": "20s", "usage": {"cpu": "16", "memory": "3Gi"}})
                    for n in nodes)
    result = run(NodeUtilizationData(nodes, samples), source="metrics.k8s.io", lower_percent=40)
    assert result.status is Status.OK
    assert result.summary.startswith("mean CPU utilisation of 5 nodes (metrics.k8s.io) 50.0 %")


def test_fetch_over_kit_and_metrics_api_not_served() -> None:
    api = serve("node-utilization-low")
    with fake_cluster(api) as cluster:
        fetched = node_utilization.fetch(cluster, NodeUtilizationParams())
        assert run(fetched, "node-utilization-low").status is Status.FAILED
        served_empty = node_utilization.fetch(cluster, NodeUtilizationParams(source="metrics.k8s.io"))
        assert run(served_empty, source="metrics.k8s.io").status is Status.ERROR
    not_found = {"kind": "Status", "code": 404, "message": "the server could not find the requested resource"}
    api.respond("/apis/metrics.k8s.io/v1beta1/nodes", 404, not_found)
    with fake_cluster(api) as cluster, pytest.raises(ClusterResponseError, match="HTTP 404"):
        node_utilization.fetch(cluster, NodeUtilizationParams(source="metrics.k8s.io"))
