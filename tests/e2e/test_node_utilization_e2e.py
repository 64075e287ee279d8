"""node-utilization end to end: the sandbox's stand-in koordlet reports 62 % CPU for every KWOK node; the process
node's real koordlet reports this machine's own usage against the node's 16 CPUs.

Healthy (local.yaml's params: the KWOK nodes, the opt-in 60 % lower bound, LoadAware's cpu 65 %, memory 95 %)
→ ok and one ping; with the defaults (real nodes only, no mean bound) → ok for the real node (the process node,
judged on its real koordlet's report). A
node whose `scheduling.koordinator.sh/usage-thresholds` annotation lowers its cpu threshold below 62 % is named and
the result `degraded` (healthy: it still pings); a refused annotation is named too. Every node above the
thresholds is the fault catalogue's node-utilization-high (test_fault_catalogue_e2e.py); a mean below the opt-in
bound its node-utilization-low.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from check_runs import REAL_NODES, CheckRuns

from outpost.result import Status

CHECK = "node-utilization"
ANNOTATION = "scheduling.koordinator.sh/usage-thresholds"
NODE = "kwok-node-0"


@pytest.fixture
def annotated(runs: CheckRuns) -> Iterator[CheckRuns]:
    """kwok-node-0 without the annotation afterwards, whatever the test set."""
    yield runs
    runs.sandbox.kubectl("annotate", "node", NODE, f"{ANNOTATION}-", check=False)


def test_healthy_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, shipped=True)
    assert result.details["mean_percent"] == pytest.approx(62.0, abs=0.1)
    assert result.details["sampled"] == runs.sandbox.nodes
    assert result.details["bounds_percent"] == {"lower": 60, "upper": None}
    assert result.details["usage_thresholds"] == {"cpu": 65, "memory": 95}


def test_defaults_judge_the_real_node_without_a_mean_bound(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK)
    assert result.details["sampled"] == REAL_NODES
    assert result.details["bounds_percent"] == {"lower": None, "upper": None}
    assert result.summary.startswith("no node above LoadAwareScheduling's usage thresholds (cpu 65 %, memory 95 %); ")


def test_a_node_annotation_lowering_its_threshold_is_honoured_degraded(annotated: CheckRuns) -> None:
    annotated.sandbox.kubectl(
        "annotate", "--overwrite", "node", NODE, f'{ANNOTATION}={{"usageThresholds":{{"cpu":50}}}}'
    )
    result = annotated.probe(CHECK, shipped=True)
    assert result.status is Status.DEGRADED, result.summary
    assert list(result.details["above_threshold"]) == [NODE]
    assert result.errors == [
        f"node {NODE}: observed usage of allocatable cpu 62.0 % (rounded 62, want <= 50 %) (NodeMetric; thresholds "
        "cpu 50 % from the node annotation): LoadAwareScheduling's Filter rejects the node for every pod but "
        "DaemonSet pods"
    ]
    assert result.reported is True
    assert annotated.receiver.pings_for(CHECK) == 1


def test_a_refused_annotation_is_named_degraded(annotated: CheckRuns) -> None:
    annotated.sandbox.kubectl("annotate", "--overwrite", "node", NODE, f"{ANNOTATION}=cpu=50")
    result = annotated.probe(CHECK, shipped=True)
    assert result.status is Status.DEGRADED, result.summary
    assert result.details["above_threshold_count"] == 0
    assert result.errors[0].startswith(f"node {NODE}: annotation {ANNOTATION} refused (not JSON")
    assert result.next_steps[0].failure == "usage-thresholds-annotation-ignored"


def test_every_node_above_the_scheduler_thresholds_fails(runs: CheckRuns) -> None:
    result = runs.probe(CHECK, {"usage_thresholds": {"cpu": 50, "memory": 95}}, shipped=True)
    assert result.status is Status.FAILED, result.summary
    assert result.details["above_threshold_count"] == runs.sandbox.nodes
    assert result.next_steps[0].failure == "every-node-above-threshold"
    assert result.reported is False
    assert runs.receiver.pings_for(CHECK) == 0
