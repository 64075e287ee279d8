"""nodemetric-freshness end to end: the NodeMetrics koord-manager creates for every node, whose status the
sandbox's stand-in koordlet keeps fresh.

Healthy (local.yaml's params: real and fake nodes) → ok, every node's NodeMetric fresh, one ping; with the
defaults only the real node (the process node) is judged. A NodeMetric no longer refreshed is the fault
catalogue's (test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from check_runs import REAL_NODES, CheckRuns

CHECK = "nodemetric-freshness"


def test_healthy_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, shipped=True)
    assert result.details["fresh"] == runs.sandbox.nodes + REAL_NODES
    assert result.details["expiry_seconds"] == 180


def test_defaults_judge_the_real_node_only(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK)
    assert result.details["fresh"] == REAL_NODES
    assert result.details["excluded"] == {"class fake not selected": runs.sandbox.nodes}
