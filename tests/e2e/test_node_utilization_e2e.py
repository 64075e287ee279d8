"""node-utilization end to end: the sandbox's stand-in koordlet reports 62 % CPU for every node.

Healthy (local.yaml's params: real and fake nodes, the opt-in 60 % lower bound, LoadAware's 65 %) → ok and one
ping; with the defaults (real nodes only, no lower bound) → ok for the real node (the process node). A node
above `node_threshold_percent` is named and the result `degraded` (healthy: it still pings). A mean outside the
bounds is the fault catalogue's (node-utilization-low/-high, test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

import pytest
from check_runs import REAL_NODES, CheckRuns

from outpost.result import Status

CHECK = "node-utilization"


def test_healthy_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, shipped=True)
    assert result.details["mean_percent"] == pytest.approx(62.0, abs=0.1)
    assert result.details["sampled"] == runs.sandbox.nodes + REAL_NODES
    assert result.details["bounds_percent"] == {"lower": 60, "upper": 65}


def test_defaults_judge_the_real_node_without_a_lower_bound(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK)
    assert result.details["sampled"] == REAL_NODES
    assert result.details["bounds_percent"] == {"lower": None, "upper": 65}
    assert result.summary.endswith("within <= 65 %; no node above 65 %")


def test_nodes_above_the_node_threshold_are_named_degraded(runs: CheckRuns) -> None:
    # The mean (62 %) stays within local.yaml's 60 to 65 %; every node is above a 50 % threshold.
    params = {"node_threshold_percent": 50, "upper_percent": 65}
    result = runs.probe(CHECK, params, shipped=True)
    assert result.status is Status.DEGRADED, result.summary
    assert result.details["above_threshold_count"] == runs.sandbox.nodes + REAL_NODES
    assert result.errors[0].startswith("node ")
    assert result.errors[0].endswith(
        " % (NodeMetric) (want <= 50 %: LoadAwareScheduling filters the node out above it)"
    )
    assert result.reported is True
    assert runs.receiver.pings_for(CHECK) == 1
