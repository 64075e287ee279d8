"""node-utilization over captured sandbox NodeMetrics (all nodes KWOK fake nodes whose stand-in
koordlet reports, so fake nodes are opted in as the sandbox's environment does): healthy (62 %), the
node-utilization-low (20 %: ok by default, failed once a lower bound is opted into, as the sandbox
does) and -high (90 %) faults; nodes above LoadAwareScheduling's 65 % named (degraded) with its
rounding; a hand-built real cluster (45 % and 55 %, fake nodes left out); stale reports left out, no
usable report (error), metrics.k8s.io reports, bound parameters; fetch over the kit, and the metrics
API not served."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from kit import fake_cluster
from kit.node_fixtures import captured_at, document, facts_and_usage, serve
from outpost.checks import node_utilization
from outpost.checks.node_utilization import NodeUtilizationData, NodeUtilizationParams, filtered_by_load_aware
from outpost.errors import ClusterResponseError
from outpost.kube.nodes import facts_of, usage_from_metrics_k8s
from outpost.result import Result, Status

SANDBOX: dict[str, Any] = {"nodes": {"classes": ["real", "fake"]}}  # what the sandbox's environment opts into
CO_LOCATION = {"lower_percent": 60}  # the tutorial's target; the sandbox opts into it to catch node-utilization-low


def data(
    state: str, metrics: list[dict[str, Any]] | None = None, nodes: list[dict[str, Any]] | None = None
) -> NodeUtilizationData:
    return NodeUtilizationData(*facts_and_usage(state, metrics, nodes))


def run(d: NodeUtilizationData, state: str = "healthy", skew: float = 0, **params: Any) -> Result:
    return node_utilization.evaluate(d, NodeUtilizationParams(**params), captured_at(state) + timedelta(seconds=skew))


@pytest.mark.parametrize(
    ("state", "params", "status", "mean", "text", "failure"),
    [
        (
            "healthy",
            SANDBOX,
            Status.OK,
            62.0,
            "mean CPU utilisation of 5 nodes (NodeMetric) 62.0 %, within <= 65 %; no node above 65 %",
            None,
        ),
        (
            "healthy",
            SANDBOX | CO_LOCATION,
            Status.OK,
            62.0,
            "mean CPU utilisation of 5 nodes (NodeMetric) 62.0 %, within 60 to 65 %; no node above 65 %",
            None,
        ),
        # upstream has no lower bound: a quiet cluster is healthy unless a co-location target is opted into
        (
            "node-utilization-low",
            SANDBOX,
            Status.OK,
            20.0,
            "mean CPU utilisation of 5 nodes (NodeMetric) 20.0 %, within <= 65 %; no node above 65 %",
            None,
        ),
        (
            "node-utilization-low",
            SANDBOX | CO_LOCATION,
            Status.FAILED,
            20.0,
            "nodes: observed mean CPU utilisation of 5 nodes (NodeMetric) 20.0 % (want 60 to 65 %); below the lower "
            "bound, e.g. kwok-node-0 20 %, kwok-node-1 20 %, kwok-node-2 20 %",
            "mean-below-bound",
        ),
        (
            "node-utilization-high",
            SANDBOX,
            Status.FAILED,
            90.0,
            "nodes: observed mean CPU utilisation of 5 nodes (NodeMetric) 90.0 % (want <= 65 %); above the upper "
            "bound, e.g. kwok-node-0 90 %, kwok-node-1 90 %, kwok-node-2 90 %",
            "mean-above-bound",
        ),
        (
            "node-utilization-high",
            SANDBOX | CO_LOCATION,
            Status.FAILED,
            90.0,
            "nodes: observed mean CPU utilisation of 5 nodes (NodeMetric) 90.0 % (want 60 to 65 %); above the upper "
            "bound, e.g. kwok-node-0 90 %, kwok-node-1 90 %, kwok-node-2 90 %",
            "mean-above-bound",
        ),
        # a real cluster at 45 % and 55 %, judged by its real nodes: healthy with the defaults
        (
            "real-cluster",
            {},
            Status.OK,
            50.0,
            "mean CPU utilisation of 2 nodes (NodeMetric) 50.0 %, within <= 65 %; no node above 65 %",
            None,
        ),
    ],
)
def test_captured_states(
    state: str, params: dict[str, Any], status: Status, mean: float, text: str, failure: str | None
) -> None:
    result = run(data(state), state, **params)
    assert result.status is status, result.errors
    assert result.details["mean_percent"] == mean
    assert (result.summary if status is Status.OK else result.errors[0]) == text
    assert len(result.next_steps) == len(result.errors)
    if failure:
        assert result.next_steps[0].failure == failure
        assert result.next_steps[0].command.startswith("kubectl get nodemetrics.slo.koordinator.sh -o custom-columns=")


def test_high_fault_also_names_every_node_above_the_load_aware_threshold() -> None:
    result = run(data("node-utilization-high"), "node-utilization-high", **SANDBOX)
    assert result.errors[1:] == [
        f"node kwok-node-{i}: observed CPU utilisation 90.0 % (NodeMetric) (want <= 65 %: "
        "LoadAwareScheduling filters the node out above it)"
        for i in range(5)
    ]
    assert result.details["above_threshold_count"] == 5
    assert [step.failure for step in result.next_steps] == ["mean-above-bound"] + ["node-above-threshold"] * 5
    assert [step.command for step in result.next_steps[1:]] == [
        f"kubectl describe node kwok-node-{i}" for i in range(5)
    ]


def metrics_at(percents: list[float]) -> list[dict[str, Any]]:
    """The healthy sandbox's NodeMetrics (32-core nodes) reporting the given CPU utilisation per node."""
    metrics: list[dict[str, Any]] = copy.deepcopy(document("healthy", "nodemetrics"))
    for metric, percent in zip(metrics, percents, strict=True):
        metric["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"] = f"{round(320 * percent)}m"
    return metrics


@pytest.mark.parametrize(
    ("percents", "params", "status", "named"),
    [
        ([40, 40, 40, 40, 80], {}, Status.DEGRADED, ["kwok-node-4"]),
        ([65.4, 60, 60, 60, 60], {}, Status.OK, []),  # rounds to 65: LoadAware still admits it
        ([65.5, 60, 60, 60, 60], {}, Status.DEGRADED, ["kwok-node-0"]),  # rounds to 66: filtered out
        ([40, 40, 40, 40, 80], {"node_threshold_percent": 80}, Status.OK, []),
        ([40, 40, 40, 70, 80], {"node_threshold_percent": 75}, Status.DEGRADED, ["kwok-node-4"]),
        # the mean bound follows the threshold unless set: 90 % nodes under a 95 % mean bound are degraded only
        ([90, 90, 90, 90, 90], {"upper_percent": 95}, Status.DEGRADED, [f"kwok-node-{i}" for i in range(5)]),
        ([90, 90, 90, 90, 90], {"node_threshold_percent": 95}, Status.OK, []),
    ],
)
def test_nodes_above_the_load_aware_threshold_are_named(
    percents: list[float], params: dict[str, Any], status: Status, named: list[str]
) -> None:
    result = run(data("healthy", metrics=metrics_at(percents)), **SANDBOX, **params)
    assert result.status is status, result.errors
    assert list(result.details["above_threshold"]) == named
    assert [e.split(":")[0] for e in result.errors] == [f"node {n}" for n in named]
    assert [step.command for step in result.next_steps] == [f"kubectl describe node {n}" for n in named]
    if status is Status.DEGRADED:
        assert result.summary.startswith(f"{len(named)} of 5 nodes above the ")
        assert "(LoadAwareScheduling filters them out)" in result.summary


@pytest.mark.parametrize(
    ("percent", "threshold", "filtered"),
    [(64.9, 65, False), (65.0, 65, False), (65.49, 65, False), (65.5, 65, True), (66.0, 65, True), (0.0, 0.5, False)],
)
def test_load_aware_rounding(percent: float, threshold: float, filtered: bool) -> None:
    assert filtered_by_load_aware(percent, threshold) is filtered


def test_many_nodes_above_threshold_first_ten_named() -> None:
    template_metric = document("node-utilization-high", "nodemetrics")[0]
    template_node = document("healthy", "nodes")[0]
    metrics = [copy.deepcopy(template_metric) | {"metadata": {"name": f"n{i:02d}"}} for i in range(12)]
    nodes = [
        copy.deepcopy(template_node) | {"metadata": {**template_node["metadata"], "name": f"n{i:02d}"}}
        for i in range(12)
    ]
    result = run(
        data("node-utilization-high", metrics=metrics, nodes=nodes),
        "node-utilization-high",
        **SANDBOX,
        upper_percent=95,
    )
    assert result.status is Status.DEGRADED
    assert len(result.errors) == 11
    assert result.errors[-1] == "nodes: 2 more above 65 % CPU (12 in all)"
    assert [step.failure for step in result.next_steps] == ["node-above-threshold"] * 10 + ["many-above-threshold"]
    assert result.summary.startswith(
        "12 of 12 nodes above the 65 % CPU threshold (LoadAwareScheduling filters "
        "them out): n00 90 %, n01 90 %, n02 90 % (+9 more); mean CPU utilisation"
    )


@pytest.mark.parametrize(
    ("params", "valid"),
    [
        ({"lower_percent": 70}, False),
        ({"lower_percent": 70, "node_threshold_percent": 80}, True),
        ({"lower_percent": 70, "upper_percent": 69}, False),
        ({"lower_percent": 65}, True),
        ({}, True),
    ],
)
def test_bounds_are_checked(params: dict[str, Any], valid: bool) -> None:
    if valid:
        NodeUtilizationParams(**params)
    else:
        with pytest.raises(ValidationError, match="lower_percent"):
            NodeUtilizationParams(**params)


def test_defaults_follow_upstream() -> None:
    params = NodeUtilizationParams()
    assert (params.node_threshold_percent, params.upper, params.lower_percent) == (65.0, 65.0, None)
    assert params.max_sample_age_seconds == 180.0
    assert params.nodes.describe() == "real nodes"


def test_stale_reports_are_left_out_and_counted() -> None:
    result = run(data("nodemetric-stale"), "nodemetric-stale", **SANDBOX)
    assert result.status is Status.OK
    assert result.details["sampled"] == 4
    assert result.details["left_out"] == {"stale report": {"count": 1, "first": ["kwok-node-0"]}}


def test_no_usable_report_is_error() -> None:
    everything_stale = run(data("healthy"), skew=3600, **SANDBOX)
    assert everything_stale.status is Status.ERROR
    assert everything_stale.summary == "no usable NodeMetric CPU report for any of 5 selected nodes (5 stale report)"
    assert [step.failure for step in everything_stale.next_steps] == ["no-usable-report"]
    no_cpu = copy.deepcopy(document("healthy", "nodemetrics"))
    for metric in no_cpu:
        del metric["status"]["nodeMetric"]
    assert run(data("healthy", metrics=no_cpu), **SANDBOX).summary.endswith("(5 no cpu usage)")
    assert run(data("healthy", metrics=[]), **SANDBOX).summary.endswith("(5 no report)")
    nodes = copy.deepcopy(document("healthy", "nodes"))
    for node in nodes:
        node["status"]["allocatable"] = {}
    assert run(data("healthy", nodes=nodes), **SANDBOX).summary.endswith("(5 no allocatable cpu)")
    assert run(data("healthy"), nodes={"classes": ["virtual"]}).status is Status.ERROR


def test_real_cluster_fake_nodes_have_no_usage_to_judge() -> None:
    default = run(data("real-cluster"), "real-cluster")
    assert default.details["excluded"] == {"class fake not selected": 2}
    opted_in = run(data("real-cluster"), "real-cluster", **SANDBOX)
    assert opted_in.status is Status.OK
    assert opted_in.details["left_out"] == {"no report": {"count": 2, "first": ["kwok-node-0", "kwok-node-1"]}}
    nothing = run(data("healthy"))  # the sandbox's nodes are all fake
    assert nothing.status is Status.ERROR
    assert nothing.summary.endswith(
        "KWOK fake nodes are left out by default (no agent runs on them); to judge "
        "them, set nodes.classes to [real, fake]"
    )
    assert [step.failure for step in nothing.next_steps] == ["nothing-selected"]
    assert nothing.next_steps[0].command == "kubectl get nodes -o wide --show-labels"


def test_metrics_k8s_source() -> None:
    nodes = tuple(facts_of(n) for n in document("healthy", "nodes"))
    samples = tuple(
        usage_from_metrics_k8s(
            {
                "metadata": {"name": n.name},
                "timestamp": "2026-12-03T13:30:10Z",
                "window": "20s",
                "usage": {"cpu": "16", "memory": "3Gi"},
            }
        )
        for n in nodes
    )
    result = run(NodeUtilizationData(nodes, samples), source="metrics.k8s.io", lower_percent=40, **SANDBOX)
    assert result.status is Status.OK
    assert result.summary.startswith("mean CPU utilisation of 5 nodes (metrics.k8s.io) 50.0 %")


def test_fetch_over_kit_and_metrics_api_not_served() -> None:
    api = serve("node-utilization-high")
    with fake_cluster(api) as cluster:
        fetched = node_utilization.fetch(cluster, NodeUtilizationParams())
        assert run(fetched, "node-utilization-high", **SANDBOX).status is Status.FAILED
        served_empty = node_utilization.fetch(cluster, NodeUtilizationParams(source="metrics.k8s.io"))
        assert run(served_empty, source="metrics.k8s.io", **SANDBOX).status is Status.ERROR
    not_found = {"kind": "Status", "code": 404, "message": "the server could not find the requested resource"}
    api.respond("/apis/metrics.k8s.io/v1beta1/nodes", 404, not_found)
    with fake_cluster(api) as cluster, pytest.raises(ClusterResponseError, match="HTTP 404"):
        node_utilization.fetch(cluster, NodeUtilizationParams(source="metrics.k8s.io"))
