"""node-utilization over captured sandbox NodeMetrics (all nodes KWOK fake nodes whose stand-in
koordlet reports, so fake nodes are opted in as the sandbox's environment does): healthy (62 %), the
node-utilization-low (20 %: ok by default, failed once a lower bound is opted into, as the sandbox
does) and -high (90 % on every node: LoadAware rejects every node, failed) faults; per node as
LoadAwareScheduling's Filter judges it (cpu 65 %, memory 95 %, its rounding, the node annotation's
thresholds replacing the scheduler's, a refused annotation ignored and named, raw allocatable,
aggregated usage), hot clusters ok with no mean bound unless opted into; a hand-built real cluster
(45 % and 55 %, fake nodes left out); stale reports left out, no usable report (error), metrics.k8s.io
reports, bound parameters; fetch over the kit, and the metrics API not served. Rows that edit a capture
(usage, annotations, aggregated usages, allocatable) make states no fault produces."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from kit import fake_cluster
from kit.node_fixtures import captured_at, document, facts_and_usage, serve
from outpost.checks import node_utilization
from outpost.checks.node_utilization import (
    NodeUtilizationData,
    NodeUtilizationParams,
    filtered_by_load_aware,
    go_round_percent,
    parse_usage_thresholds_annotation,
)
from outpost.errors import ClusterResponseError
from outpost.kube.nodes import facts_of, usage_from_metrics_k8s
from outpost.result import Result, Status

SANDBOX: dict[str, Any] = {"nodes": {"classes": ["real", "fake"]}}  # what the sandbox's environment opts into
CO_LOCATION = {"lower_percent": 60}  # the tutorial's target; the sandbox opts into it to catch node-utilization-low
ANNOTATION = "scheduling.koordinator.sh/usage-thresholds"
RAW = "node.koordinator.sh/raw-allocatable"
GI = 2**30


def data(
    state: str, metrics: list[dict[str, Any]] | None = None, nodes: list[dict[str, Any]] | None = None
) -> NodeUtilizationData:
    return NodeUtilizationData(*facts_and_usage(state, metrics, nodes))


def run(d: NodeUtilizationData, state: str = "healthy", skew: float = 0, **params: Any) -> Result:
    return node_utilization.evaluate(d, NodeUtilizationParams(**params), captured_at(state) + timedelta(seconds=skew))


EVERY_NODE_FAILED = (
    "nodes: all 5 judged nodes above LoadAwareScheduling's usage thresholds (NodeMetric), so its Filter admits no "
    "new pod but DaemonSet pods to any of them: kwok-node-0 cpu 90 % > 65 %, kwok-node-1 cpu 90 % > 65 %, "
    "kwok-node-2 cpu 90 % > 65 % (+2 more)"
)


@pytest.mark.parametrize(
    ("state", "params", "status", "mean", "text", "failure"),
    [
        (
            "healthy",
            SANDBOX,
            Status.OK,
            62.0,
            "no node above LoadAwareScheduling's usage thresholds (cpu 65 %, memory 95 %); "
            "mean CPU utilisation of 5 nodes (NodeMetric) 62.0 %",
            None,
        ),
        (
            "healthy",
            SANDBOX | CO_LOCATION,
            Status.OK,
            62.0,
            "no node above LoadAwareScheduling's usage thresholds (cpu 65 %, memory 95 %); "
            "mean CPU utilisation of 5 nodes (NodeMetric) 62.0 %, within >= 60 %",
            None,
        ),
        # upstream has no lower bound: a quiet cluster is healthy unless a co-location target is opted into
        (
            "node-utilization-low",
            SANDBOX,
            Status.OK,
            20.0,
            "no node above LoadAwareScheduling's usage thresholds (cpu 65 %, memory 95 %); "
            "mean CPU utilisation of 5 nodes (NodeMetric) 20.0 %",
            None,
        ),
        (
            "node-utilization-low",
            SANDBOX | CO_LOCATION,
            Status.FAILED,
            20.0,
            "nodes: observed mean CPU utilisation of 5 nodes (NodeMetric) 20.0 % (want >= 60 %); below the lower "
            "bound, e.g. kwok-node-0 20 %, kwok-node-1 20 %, kwok-node-2 20 %",
            "mean-below-bound",
        ),
        # every node at 90 %: LoadAware rejects every judged node, with or without a mean bound
        ("node-utilization-high", SANDBOX, Status.FAILED, 90.0, EVERY_NODE_FAILED, "every-node-above-threshold"),
        (
            "node-utilization-high",
            SANDBOX | CO_LOCATION,
            Status.FAILED,
            90.0,
            EVERY_NODE_FAILED,
            "every-node-above-threshold",
        ),
        (
            "node-utilization-high",
            SANDBOX | {"upper_percent": 80},
            Status.FAILED,
            90.0,
            "nodes: observed mean CPU utilisation of 5 nodes (NodeMetric) 90.0 % (want <= 80 %); above the upper "
            "bound, e.g. kwok-node-0 90 %, kwok-node-1 90 %, kwok-node-2 90 %",
            "mean-above-bound",
        ),
        # a real cluster at 45 % and 55 %, judged by its real nodes: healthy with the defaults
        (
            "real-cluster",
            {},
            Status.OK,
            50.0,
            "no node above LoadAwareScheduling's usage thresholds (cpu 65 %, memory 95 %); "
            "mean CPU utilisation of 2 nodes (NodeMetric) 50.0 %",
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
        assert result.next_steps[0].command.startswith("kubectl get ")


def test_high_fault_also_names_every_node_above_the_load_aware_threshold() -> None:
    result = run(data("node-utilization-high"), "node-utilization-high", **SANDBOX)
    assert result.errors[1:] == [
        f"node kwok-node-{i}: observed usage of allocatable cpu 90.0 % (rounded 90, want <= 65 %) (NodeMetric; "
        "thresholds cpu 65 %, memory 95 % from the scheduler's usageThresholds): LoadAwareScheduling's Filter "
        "rejects the node for every pod but DaemonSet pods"
        for i in range(5)
    ]
    assert result.details["above_threshold_count"] == 5
    assert [step.failure for step in result.next_steps] == ["every-node-above-threshold"] + ["node-above-threshold"] * 5
    assert [step.command for step in result.next_steps[1:]] == [
        f"kubectl describe node kwok-node-{i}" for i in range(5)
    ]


def edited(
    percents: list[float],
    memory: list[float] | None = None,
    annotations: dict[int, dict[str, str]] | None = None,
    aggregated: dict[int, list[dict[str, Any]]] | None = None,
) -> NodeUtilizationData:
    """The healthy sandbox (5 nodes of 32 cores, 256Gi) reporting the given CPU (and memory) percent per node, with
    node annotations and NodeMetric aggregatedNodeUsages laid over node i."""
    metrics: list[dict[str, Any]] = copy.deepcopy(document("healthy", "nodemetrics"))
    nodes: list[dict[str, Any]] = copy.deepcopy(document("healthy", "nodes"))
    for i, (metric, percent) in enumerate(zip(metrics, percents, strict=True)):
        resources = metric["status"]["nodeMetric"]["nodeUsage"]["resources"]
        resources["cpu"] = f"{round(320 * percent)}m"
        if memory:
            resources["memory"] = str(round(256 * GI * memory[i] / 100))
        if aggregated and i in aggregated:
            metric["status"]["nodeMetric"]["aggregatedNodeUsages"] = aggregated[i]
    for i, extra in (annotations or {}).items():
        nodes[i]["metadata"]["annotations"].update(extra)
    return data("healthy", metrics=metrics, nodes=nodes)


def p95(duration: str, cpu_percent: float) -> dict[str, Any]:
    return {"duration": duration, "usage": {"p95": {"resources": {"cpu": f"{round(320 * cpu_percent)}m"}}}}


AGGREGATED: dict[str, Any] = {"aggregated": {"usage_thresholds": {"cpu": 65}, "usage_aggregation_type": "p95"}}


@pytest.mark.parametrize(
    ("case", "percents", "memory", "annotations", "aggregated", "params", "status", "named"),
    [
        # no mean bound by default: a co-located cluster run hot on purpose, every node within its thresholds
        ("hot, each node rounds to 65", [65.4] * 5, None, None, None, {}, Status.OK, {}),
        (
            "hot at 80 %, thresholds raised by annotation",
            [80] * 5,
            None,
            {i: {ANNOTATION: '{"usageThresholds": {"cpu": 85, "memory": 95}}'} for i in range(5)},
            None,
            {},
            Status.OK,
            {},
        ),
        ("the mean bound, opted into", [65.4] * 5, None, None, None, {"upper_percent": 65}, Status.FAILED, {}),
        ("one node over cpu", [40, 40, 40, 40, 80], None, None, None, {}, Status.DEGRADED, {"kwok-node-4": ["cpu"]}),
        ("rounds to 66", [65.5, 60, 60, 60, 60], None, None, None, {}, Status.DEGRADED, {"kwok-node-0": ["cpu"]}),
        (
            "memory over 95",
            [60] * 5,
            [50, 96, 95.4, 50, 50],
            None,
            None,
            {},
            Status.DEGRADED,
            {"kwok-node-1": ["memory"]},
        ),
        (
            "cpu and memory over",
            [60, 70, 60, 60, 60],
            [50, 97, 50, 50, 50],
            None,
            None,
            {},
            Status.DEGRADED,
            {"kwok-node-1": ["cpu", "memory"]},
        ),
        (
            "annotation raises a node's threshold",
            [40, 40, 40, 40, 80],
            None,
            {4: {ANNOTATION: '{"usageThresholds": {"cpu": 85}}'}},
            None,
            {},
            Status.OK,
            {},
        ),
        # the annotation's map replaces the scheduler's whole: no memory threshold left on that node
        (
            "annotation without memory",
            [40] * 5,
            [50, 50, 50, 50, 99],
            {4: {ANNOTATION: '{"usageThresholds": {"cpu": 85}}'}},
            None,
            {},
            Status.OK,
            {},
        ),
        (
            "annotation lowers a node's threshold",
            [60] * 5,
            None,
            {2: {ANNOTATION: '{"usageThresholds": {"cpu": 50, "memory": 95}}'}},
            None,
            {},
            Status.DEGRADED,
            {"kwok-node-2": ["cpu"]},
        ),
        (
            "annotation's 0 is no threshold",
            [90, 40, 40, 40, 40],
            None,
            {0: {ANNOTATION: '{"usageThresholds": {"cpu": 0}}'}},
            None,
            {},
            Status.OK,
            {},
        ),
        (
            "annotation without usageThresholds",
            [70, 40, 40, 40, 40],
            None,
            {0: {ANNOTATION: "{}"}},
            None,
            {},
            Status.DEGRADED,
            {"kwok-node-0": ["cpu"]},
        ),
        # refused: ignored by the scheduler, which judges with its own thresholds; named either way
        (
            "malformed annotation",
            [70, 40, 40, 40, 40],
            None,
            {0: {ANNOTATION: '{"usageThresholds": {"cpu": 80}'}},
            None,
            {},
            Status.DEGRADED,
            {"kwok-node-0": ["cpu"]},
        ),
        (
            "annotation with a fraction",
            [40] * 5,
            None,
            {3: {ANNOTATION: '{"usageThresholds": {"cpu": 80.5}}'}},
            None,
            {},
            Status.DEGRADED,
            {},
        ),
        (
            "scheduler args changed",
            [70, 40, 40, 40, 80],
            None,
            None,
            None,
            {"usage_thresholds": {"cpu": 75}},
            Status.DEGRADED,
            {"kwok-node-4": ["cpu"]},
        ),
        # raw allocatable (amplification): 62 % of the amplified 32 cores is 124 % of the raw 16
        (
            "raw allocatable",
            [62] * 5,
            None,
            {1: {RAW: '{"cpu": "16"}'}},
            None,
            {},
            Status.DEGRADED,
            {"kwok-node-1": ["cpu"]},
        ),
        (
            "raw allocatable malformed: status.allocatable",
            [62] * 5,
            None,
            {1: {RAW: '{"cpu": "16 cores"}'}},
            None,
            {},
            Status.OK,
            {},
        ),
        ("raw allocatable as allocatable", [62] * 5, None, {1: {RAW: '{"cpu": 32}'}}, None, {}, Status.OK, {}),
        (
            "raw allocatable of memory only",
            [62] * 5,
            [50, 99, 50, 50, 50],
            {1: {RAW: '{"memory": "512Gi"}'}},
            None,
            {},
            Status.OK,
            {},
        ),
        # aggregated usage, opted into by the scheduler's args or by the node's annotation
        (
            "aggregated: the longest period, not the hottest",
            [50] * 5,
            None,
            None,
            {0: [p95("5m0s", 70), p95("10m0s", 50)]},
            AGGREGATED,
            Status.OK,
            {},
        ),
        (
            "aggregated: longest period",
            [50] * 5,
            None,
            None,
            {0: [p95("5m0s", 50), p95("10m0s", 70)]},
            AGGREGATED,
            Status.DEGRADED,
            {"kwok-node-0": ["cpu"]},
        ),
        (
            "aggregated by annotation",
            [50] * 5,
            None,
            {0: {ANNOTATION: '{"aggregatedUsage": {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95"}}'}},
            {0: [p95("5m0s", 62)]},
            {},
            Status.DEGRADED,
            {"kwok-node-0": ["cpu"]},
        ),
        (
            "aggregated period not reported: estimates only",
            [90, 50, 50, 50, 50],
            None,
            None,
            {0: [p95("5m0s", 90)]},
            {"aggregated": AGGREGATED["aggregated"] | {"usage_aggregated_duration_seconds": 600}},
            Status.OK,
            {},
        ),
    ],
)
def test_each_node_judged_as_the_load_aware_filter(
    case: str,
    percents: list[float],
    memory: list[float] | None,
    annotations: dict[int, dict[str, str]] | None,
    aggregated: dict[int, list[dict[str, Any]]] | None,
    params: dict[str, Any],
    status: Status,
    named: dict[str, list[str]],
) -> None:
    result = run(edited(percents, memory, annotations, aggregated), **SANDBOX, **params)
    assert result.status is status, (case, result.summary, result.errors)
    assert {n: sorted(r) for n, r in result.details["above_threshold"].items()} == named, case
    node_lines = [e for e in result.errors if e.startswith("node ") and "observed" in e]
    assert [e.split(":")[0] for e in node_lines] == [f"node {n}" for n in named], case
    if named:
        assert all(
            "LoadAwareScheduling's Filter rejects the node for every pod but DaemonSet pods" in e for e in node_lines
        )
        assert result.summary.startswith(f"{len(named)} of 5 nodes above LoadAwareScheduling's usage thresholds")


def test_the_annotation_and_the_aggregated_usage_in_the_finding() -> None:
    lowered = run(edited([60] * 5, annotations={2: {ANNOTATION: '{"usageThresholds": {"cpu": 50}}'}}), **SANDBOX)
    assert lowered.errors == [
        "node kwok-node-2: observed usage of allocatable cpu 60.0 % (rounded 60, want <= 50 %) (NodeMetric; "
        "thresholds cpu 50 % from the node annotation): LoadAwareScheduling's Filter rejects the node for every pod "
        "but DaemonSet pods"
    ]
    assert lowered.details["annotation_thresholds"] == {"kwok-node-2": {"cpu": 50}}
    by_p95 = run(edited([50] * 5, aggregated={0: [p95("5m0s", 70)]}), **SANDBOX, **AGGREGATED)
    assert by_p95.errors[0].startswith("node kwok-node-0: observed aggregated p95 of allocatable cpu 70.0 %")
    assert by_p95.errors[0].endswith(
        "thresholds cpu 65 % from the scheduler's aggregated usageThresholds): "
        "LoadAwareScheduling's Filter rejects the node for every pod but DaemonSet pods"
    )
    missing = run(
        edited([90, 50, 50, 50, 50], aggregated={0: [p95("5m0s", 90)]}),
        **SANDBOX,
        aggregated=AGGREGATED["aggregated"] | {"usage_aggregated_duration_seconds": 600},
    )
    assert missing.details["aggregated_usage_missing"] == [
        "kwok-node-0",
        "kwok-node-1",
        "kwok-node-2",
        "kwok-node-3",
        "kwok-node-4",
    ]


def test_a_refused_annotation_is_named_with_what_the_scheduler_does_instead() -> None:
    result = run(
        edited([70, 40, 40, 40, 40], annotations={0: {ANNOTATION: '{"usageThresholds": {"cpu": 80}'}}), **SANDBOX
    )
    assert result.status is Status.DEGRADED
    assert result.errors[1] == (
        f"node kwok-node-0: annotation {ANNOTATION} refused (not JSON (Expecting ',' delimiter at character 31)): "
        "koord-scheduler ignores it and judges the node with its own usageThresholds (cpu 65 %, memory 95 %)"
    )
    assert [step.failure for step in result.next_steps] == [
        "node-above-threshold",
        "usage-thresholds-annotation-ignored",
    ]
    assert result.next_steps[1].command == (
        "kubectl get node kwok-node-0 -o jsonpath="
        "'{.metadata.annotations.scheduling\\.koordinator\\.sh/usage-thresholds}'"
    )
    assert result.summary.startswith(
        "1 of 5 nodes above LoadAwareScheduling's usage thresholds (its Filter rejects them): kwok-node-0 cpu 70 % > "
        f"65 %; 1 nodes' {ANNOTATION} annotation ignored by koord-scheduler; mean CPU utilisation"
    )


@pytest.mark.parametrize(
    ("text", "thresholds", "refused"),
    [
        ('{"usageThresholds": {"cpu": 80, "memory": 90}}', {"cpu": 80, "memory": 90}, ""),
        ('{"UsageThresholds": {"cpu": 80}}', {"cpu": 80}, ""),  # encoding/json matches field names case-insensitively
        ('{"usageThresholds": {"cpu": 80}, "unknown": 1}', {"cpu": 80}, ""),  # unknown fields are ignored
        ("null", {}, ""),
        ("{}", {}, ""),
        ('{"usageThresholds": {"cpu": "80"}}', None, "usageThresholds.cpu is not an integer percent"),
        ('{"usageThresholds": {"cpu": 1e2}}', None, "1e2 is not an integer"),
        ('{"usageThresholds": [80]}', None, "usageThresholds is not an object"),
        ('{"prodUsageThresholds": {"cpu": true}}', None, "prodUsageThresholds.cpu is not an integer percent"),
        ("[]", None, "not a JSON object"),
        ("cpu=80", None, "not JSON"),
        ('{"aggregatedUsage": {"usageAggregatedDuration": "5 minutes"}}', None, "not a Go duration"),
    ],
)
def test_annotation_decoded_as_go_decodes_it(text: str, thresholds: dict[str, int] | None, refused: str) -> None:
    if thresholds is None:
        with pytest.raises(ValueError, match=refused):
            parse_usage_thresholds_annotation(text)
    else:
        assert parse_usage_thresholds_annotation(text) == (thresholds, None)


@pytest.mark.parametrize(
    ("used", "total", "threshold", "filtered"),
    [
        (6490, 10000, 65, False),
        (6500, 10000, 65, False),
        (6549, 10000, 65, False),
        (6550, 10000, 65, True),  # math.Round: half away from zero
        (6600, 10000, 65, True),
        (9000, 10000, 0, False),  # 0: no threshold
        (9000, 0, 65, False),  # no allocatable: no test
    ],
)
def test_load_aware_rounding(used: int, total: int, threshold: int, filtered: bool) -> None:
    assert filtered_by_load_aware(used, total, threshold) is filtered
    if total:
        assert go_round_percent(used, total) == round(used / 100 + 0.000001)


def test_many_nodes_above_threshold_first_ten_named() -> None:
    template_metric = document("node-utilization-high", "nodemetrics")[0]
    template_node = document("healthy", "nodes")[0]
    metrics = [copy.deepcopy(template_metric) | {"metadata": {"name": f"n{i:02d}"}} for i in range(12)]
    nodes = [
        copy.deepcopy(template_node) | {"metadata": {**template_node["metadata"], "name": f"n{i:02d}"}}
        for i in range(12)
    ]
    nodes[11]["metadata"] = {
        **nodes[11]["metadata"],
        "annotations": {
            **nodes[11]["metadata"]["annotations"],
            ANNOTATION: json.dumps({"usageThresholds": {"cpu": 95}}),
        },
    }
    result = run(data("node-utilization-high", metrics=metrics, nodes=nodes), "node-utilization-high", **SANDBOX)
    assert result.status is Status.DEGRADED
    assert len(result.errors) == 11
    assert result.errors[-1] == "nodes: 1 more above LoadAwareScheduling's thresholds (11 in all)"
    assert [step.failure for step in result.next_steps] == ["node-above-threshold"] * 10 + ["many-above-threshold"]
    assert result.summary.startswith(
        "11 of 12 nodes above LoadAwareScheduling's usage thresholds (its Filter rejects them): n00 cpu 90 % > 65 %, "
        "n01 cpu 90 % > 65 %, n02 cpu 90 % > 65 % (+8 more); mean CPU utilisation"
    )


@pytest.mark.parametrize(
    ("params", "valid"),
    [
        ({"lower_percent": 70}, True),  # no upper bound by default
        ({"lower_percent": 70, "upper_percent": 80}, True),
        ({"lower_percent": 70, "upper_percent": 69}, False),
        ({"usage_thresholds": {"cpu": 101}}, False),
        ({"usage_thresholds": {"cpu": -1}}, False),
        ({"aggregated": {"usage_thresholds": {"cpu": 120}, "usage_aggregation_type": "p95"}}, False),
        ({"aggregated": {"usage_thresholds": {"cpu": 60}, "usage_aggregation_type": "p42"}}, False),
        ({"aggregated": {"usage_thresholds": {"cpu": 60}, "usage_aggregation_type": "p95"}}, True),
        (
            {
                "aggregated": {"usage_thresholds": {"cpu": 60}, "usage_aggregation_type": "p95"},
                "source": "metrics.k8s.io",
            },
            False,
        ),
        ({}, True),
    ],
)
def test_bounds_are_checked(params: dict[str, Any], valid: bool) -> None:
    if valid:
        NodeUtilizationParams(**params)
    else:
        with pytest.raises(ValidationError):
            NodeUtilizationParams(**params)


def test_defaults_follow_upstream() -> None:
    params = NodeUtilizationParams()
    assert params.usage_thresholds == {"cpu": 65, "memory": 95}
    assert (params.aggregated, params.upper_percent, params.lower_percent) == (None, None, None)
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
    assert result.summary == (
        "no node above LoadAwareScheduling's usage thresholds (cpu 65 %, memory 95 %); "
        "mean CPU utilisation of 5 nodes (metrics.k8s.io) 50.0 %, within >= 40 %"
    )


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
