"""Reading nodes and a DaemonSet's pods for the node checks, page by page, reduced as they arrive.

Collections are LISTed in pages or followed by a warm instance (`outpost.cluster.incremental`, same records
either way), pods only in one namespace by label. Each page is validated into outline views and each item
reduced to its facts at once, so memory grows by a small record per node, not whole objects. A wrong type in
any item is `MalformedResponse`, never a silently skipped node.
"""

from __future__ import annotations

from outpost.cluster.client import Cluster
from outpost.cluster.incremental import Collection, read_collection, read_collections
from outpost.kube.daemons import DaemonPod, daemon_pod
from outpost.kube.nodes import (
    NodeFacts,
    NodesAndUsage,
    UsageSample,
    nodemetric_usage,
    outline_facts,
    usage_from_metrics_k8s,
)
from outpost.kube.objects import NodeMetricOutline, NodeOutline, PodOutline
from outpost.kube.paths import NODE_METRICS, NODE_METRICS_K8S, NODES, PODS, collection_path


def node_collection(label_selector: str | None = None) -> Collection[NodeOutline, NodeFacts]:
    return Collection(collection_path(NODES), NodeOutline, outline_facts, label_selector=label_selector or None)


def daemon_pod_collection(namespace: str, label_selector: str) -> Collection[PodOutline, DaemonPod]:
    return Collection(collection_path(PODS, namespace), PodOutline, daemon_pod, label_selector=label_selector or None)


def nodemetric_collection(page_size: int | None = None) -> Collection[NodeMetricOutline, UsageSample]:
    """Every Koordinator NodeMetric as a usage sample. A NodeMetric carries the usage of every pod of
    its node, so it is large: `page_size` keeps one page under the response cap on big clusters (its
    outline view leaves those per-pod reports unbuilt)."""
    return Collection(collection_path(NODE_METRICS), NodeMetricOutline, nodemetric_usage, page_size=page_size)


def read_nodes(cluster: Cluster, label_selector: str | None = None) -> list[NodeFacts]:
    return read_collection(cluster, node_collection(label_selector))


def read_nodes_and_nodemetrics(cluster: Cluster, label_selector: str | None, page_size: int | None) -> NodesAndUsage:
    """The nodes `label_selector` matches and every NodeMetric's usage, read together (`nodemetric_collection`
    for `page_size`)."""
    nodes, samples = read_collections(cluster, node_collection(label_selector), nodemetric_collection(page_size))
    return NodesAndUsage(tuple(nodes), tuple(samples))


def read_daemon_pods(cluster: Cluster, namespace: str, label_selector: str) -> list[DaemonPod]:
    return read_collection(cluster, daemon_pod_collection(namespace, label_selector))


def read_metrics_k8s(cluster: Cluster) -> list[UsageSample]:
    """Every node's usage from the resource metrics API (metrics-server)."""
    path = collection_path(NODE_METRICS_K8S)
    return [usage_from_metrics_k8s(item, f"LIST {path}") for item in cluster.iter_list(path)]
