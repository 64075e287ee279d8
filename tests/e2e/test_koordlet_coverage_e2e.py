"""koordlet-coverage end to end: the sandbox's real DaemonSet controller, the probe's own identity, a real
heartbeat receiver.

Healthy (local.yaml's params: real and fake nodes) → ok, every node covered, exactly one ping. With the
defaults only the real node (the process node) is judged and the fake ones are counted as left out; a selection
of no node at all is `error` (exit status 2 from the CLI, the opt-in named), never ok. A koordlet missing from a
node is the fault catalogue's (test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from check_runs import REAL_NODES, CheckRuns

from outpost.kube.nodes import FAKE_OPT_IN

CHECK = "koordlet-coverage"


def test_healthy_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, shipped=True)
    assert result.details["coverage_by_class"] == {
        "real": {"selected": REAL_NODES, "covered": REAL_NODES, "uncovered": 0},
        "fake": {"selected": runs.sandbox.nodes, "covered": runs.sandbox.nodes, "uncovered": 0},
    }


def test_defaults_judge_the_real_node_only(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK)
    assert result.details["coverage_by_class"] == {
        "real": {"selected": REAL_NODES, "covered": REAL_NODES, "uncovered": 0}
    }
    assert result.details["excluded"] == {"class fake not selected": runs.sandbox.nodes}


def test_no_node_selected_is_error_with_exit_2(runs: CheckRuns) -> None:
    code, result = runs.cli(runs.config(CHECK, {"nodes": {"classes": ["virtual"]}}), CHECK)
    assert (code, result["status"]) == (2, "error"), result
    assert "no node selected (virtual nodes; " in result["summary"]
    assert result["summary"].endswith(FAKE_OPT_IN)
    assert result["reported"] is False
    assert runs.receiver.pings_for(CHECK) == 0
