from __future__ import annotations

from typing import Any

import pytest

from outpost.kube.nodes import NodeClass, blocking_taints, classify, is_schedulable, tolerates, untolerated
from outpost.kube.objects import Node, Taint, Toleration, parse


def node(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, spec: dict[str, Any] | None = None
) -> Node:
    return parse(
        Node,
        {"metadata": {"name": "n", "labels": labels or {}, "annotations": annotations or {}}, "spec": spec or {}},
        "t",
    )


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        ({"type": "kwok"}, {"kwok.x-k8s.io/node": "fake"}, NodeClass.FAKE),
        ({"type": "kwok"}, {}, NodeClass.REAL),  # kwokctl's label alone is not the KWOK marker
        ({"type": "virtual-kubelet"}, {}, NodeClass.VIRTUAL),
        ({}, {"kwok.x-k8s.io/node": "real"}, NodeClass.REAL),
        ({}, {}, NodeClass.REAL),
    ],
)
def test_classify(labels: dict[str, str], annotations: dict[str, str], expected: NodeClass) -> None:
    assert classify(node(labels, annotations)) is expected


def test_schedulable_and_blocking_taints() -> None:
    cordoned = node(
        spec={
            "unschedulable": True,
            "taints": [
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                {"key": "soft", "effect": "PreferNoSchedule"},
                {"key": "evict", "value": "yes", "effect": "NoExecute"},
            ],
        }
    )
    assert not is_schedulable(cordoned)
    assert [t.key for t in blocking_taints(cordoned)] == ["node.kubernetes.io/unschedulable", "evict"]
    assert is_schedulable(node())


NOT_READY = Taint(key="node.kubernetes.io/not-ready", effect="NoExecute")
DEDICATED = Taint(key="dedicated", value="gpu", effect="NoSchedule")


@pytest.mark.parametrize(
    ("tolerations", "taints", "ok"),
    [
        ([], [], True),
        ([], [DEDICATED], False),
        ([{"operator": "Exists"}], [NOT_READY, DEDICATED], True),  # koordlet: tolerates everything
        ([{"key": "dedicated", "operator": "Exists"}], [DEDICATED], True),
        ([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}], [DEDICATED], True),  # Equal by default
        ([{"key": "dedicated", "value": "cpu", "effect": "NoSchedule"}], [DEDICATED], False),
        ([{"key": "dedicated", "value": "gpu", "effect": "NoExecute"}], [DEDICATED], False),
        ([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}], [DEDICATED, NOT_READY], False),
        ([{"operator": "Exists", "effect": "NoExecute"}], [NOT_READY], True),
        ([{"key": "dedicated", "operator": "Gt", "value": "1"}], [DEDICATED], False),
    ],
)
def test_tolerates(tolerations: list[dict[str, Any]], taints: list[Taint], ok: bool) -> None:
    held = [Toleration.model_validate(t) for t in tolerations]
    assert tolerates(held, taints) is ok
    assert bool(untolerated(held, taints)) is not ok
