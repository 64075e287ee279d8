from __future__ import annotations

import pytest

from outpost.kube.conditions import READY, Condition, find_condition, is_true
from outpost.kube.health import HealthLine, failing, parse_health_body
from outpost.kube.messages import observed, ref


def test_message_forms() -> None:
    assert ref("DaemonSet", "koordlet", "koordinator-system") == "daemonset koordinator-system/koordlet"
    assert ref("Node", "kwok-node-1") == "node kwok-node-1"
    assert observed("Deployment", "kruise-controller-manager", "kruise-system", "0 ready replicas", ">= 1") == (
        "deployment kruise-system/kruise-controller-manager: observed 0 ready replicas (want >= 1)"
    )


@pytest.mark.parametrize(
    ("conditions", "found", "true"),
    [
        ([], None, False),
        ([{"type": "Ready", "status": "True"}], "True", True),
        ([{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}], "False", False),
        ([{"type": "Ready", "status": "Unknown"}], "Unknown", False),
        ([{"type": "MemoryPressure", "status": "True"}], None, False),
        ([{"type": "Ready"}], "Unknown", False),  # a condition without a status is not True
    ],
)
def test_conditions(conditions: list[dict[str, str]], found: str | None, true: bool) -> None:
    parsed = [Condition.model_validate(c) for c in conditions]
    condition = find_condition(parsed, READY)
    assert (condition.status if condition else None) == found
    assert is_true(parsed, READY) is true


def test_condition_describe() -> None:
    condition = Condition.model_validate(
        {
            "type": "Ready",
            "status": "False",
            "reason": "KubeletNotReady",
            "message": "PLEG is not healthy",
            "lastTransitionTime": "2026-12-03T10:00:00Z",
        }
    )
    assert condition.describe() == "Ready=False (KubeletNotReady: PLEG is not healthy)"
    assert condition.last_transition_time is not None


def test_health_body() -> None:
    body = "[+]ping ok\n[+]log ok\n[-]webhook-ready failed: reason withheld\nhealthz check failed\n"
    lines = parse_health_body(body)
    assert lines == [
        HealthLine("ping", True, "[+]ping ok"),
        HealthLine("log", True, "[+]log ok"),
        HealthLine("webhook-ready", False, "[-]webhook-ready failed: reason withheld"),
    ]
    assert [line.detail for line in failing(lines)] == ["webhook-ready failed: reason withheld"]
    assert parse_health_body("ok") == []
    assert parse_health_body("") == []
