"""Node classification and scheduling facts, for coverage checks ("which nodes should run this DaemonSet?").

Guarantees:
- `classify`: a node is `fake` when it carries the KWOK annotation `kwok.x-k8s.io/node=fake` (the
  marker kwok itself uses; a label selector cannot find it), `virtual` when labelled
  `type=virtual-kubelet` (virtual-kubelet nodes run no DaemonSets), `real` otherwise;
- `tolerates` follows Kubernetes toleration semantics exactly (operator Exists/Equal, an empty key
  with Exists tolerates every taint, an empty effect matches every effect), so a DaemonSet that
  tolerates everything (koordlet) is expected on tainted nodes too, and one that does not is not.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from outpost.kube.objects import Node, Taint, Toleration

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_FAKE_VALUE = "fake"
VIRTUAL_KUBELET_LABEL = "type"
VIRTUAL_KUBELET_VALUE = "virtual-kubelet"
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


class NodeClass(StrEnum):
    REAL = "real"
    FAKE = "fake"
    VIRTUAL = "virtual"


def classify(node: Node) -> NodeClass:
    if node.metadata.annotations.get(KWOK_NODE_ANNOTATION) == KWOK_FAKE_VALUE:
        return NodeClass.FAKE
    if node.metadata.labels.get(VIRTUAL_KUBELET_LABEL) == VIRTUAL_KUBELET_VALUE:
        return NodeClass.VIRTUAL
    return NodeClass.REAL


def is_schedulable(node: Node) -> bool:
    """Not cordoned (`spec.unschedulable`). Taints are a separate question: see `blocking_taints`."""
    return not node.spec.unschedulable


def blocking_taints(node: Node) -> list[Taint]:
    """Taints that keep pods off the node unless tolerated (NoSchedule, NoExecute; not PreferNoSchedule)."""
    return [taint for taint in node.spec.taints if taint.effect in BLOCKING_EFFECTS]


def toleration_matches(toleration: Toleration, taint: Taint) -> bool:
    """Does one toleration tolerate one taint? (k8s.io/api/core/v1 Toleration.ToleratesTaint)"""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    if toleration.operator in ("Equal", ""):
        return toleration.key == taint.key and toleration.value == taint.value
    return False  # an unknown operator tolerates nothing


def untolerated(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> list[Taint]:
    """The taints none of `tolerations` tolerates."""
    held = list(tolerations)
    return [taint for taint in taints if not any(toleration_matches(t, taint) for t in held)]


def tolerates(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> bool:
    """Every taint is tolerated by some toleration."""
    return not untolerated(tolerations, taints)
