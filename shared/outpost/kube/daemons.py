"""DaemonSet coverage, judged by comparing nodes with pods (not by the DaemonSet's own counters).

A DaemonSet's status counts only the nodes it currently targets: when a label or taint stops it matching node n7,
`desiredNumberScheduled` shrinks and it reads "19 of 19 ready" while n7 runs no agent. So `coverage` (pure) puts
every judged node in exactly one of covered (a Ready, non-terminating pod), not ready, or missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from outpost.errors import MalformedResponse
from outpost.kube.nodes import NodeFacts
from outpost.kube.objects import Pod, PodOutline, parse

if TYPE_CHECKING:  # msgspec is imported by the first LIST that decodes into a mirror, never by this module
    from outpost.kube.fast_outlines import FastPodOutline


@dataclass(frozen=True)
class DaemonPod:
    name: str
    node_name: str
    ready: bool
    terminating: bool = False
    phase: str = ""

    @property
    def serving(self) -> bool:
        """Ready and not on its way out: what counts as "the node has the agent"."""
        return self.ready and not self.terminating

    def describe(self) -> str:
        state = "terminating" if self.terminating else (self.phase or "no phase")
        return f"pod {self.name} {state}, not Ready" if not self.ready else f"pod {self.name} terminating"


def daemon_pod(pod: Pod | PodOutline | FastPodOutline, where: str = "pod") -> DaemonPod:
    """What coverage needs of a pod (read whole or as its outline, `Cluster.iter_list_as`); no name is
    MalformedResponse."""
    if not pod.name:
        raise MalformedResponse(f"{where}: a pod without metadata.name")
    return DaemonPod(pod.name, pod.node_name, pod.ready, pod.terminating, pod.status.phase)


def daemon_pod_of(raw: object, where: str = "pod") -> DaemonPod:
    """A Pod as decoded JSON reduced to what coverage needs; a wrong type is MalformedResponse."""
    return daemon_pod(parse(PodOutline, raw, where), where)


@dataclass(frozen=True)
class Coverage:
    covered: tuple[str, ...]
    not_ready: tuple[tuple[str, str], ...]  # (node, why: its pods and their state)
    missing: tuple[str, ...]

    @property
    def uncovered(self) -> tuple[str, ...]:
        """Every judged node without a serving pod, sorted: not ready ones and missing ones."""
        return tuple(sorted([node for node, _ in self.not_ready] + list(self.missing)))


def coverage(nodes: Sequence[NodeFacts], pods: Iterable[DaemonPod]) -> Coverage:
    judged = {node.name for node in nodes}
    by_node: dict[str, list[DaemonPod]] = {}
    for pod in pods:
        if pod.node_name in judged:
            by_node.setdefault(pod.node_name, []).append(pod)
    covered: list[str] = []
    not_ready: list[tuple[str, str]] = []
    missing: list[str] = []
    for name in sorted(judged):
        on_node = by_node.get(name, [])
        if any(pod.serving for pod in on_node):
            covered.append(name)
        elif on_node:
            not_ready.append((name, "; ".join(pod.describe() for pod in sorted(on_node, key=lambda p: p.name))))
        else:
            missing.append(name)
    return Coverage(tuple(covered), tuple(not_ready), tuple(missing))
