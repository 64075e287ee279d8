"""Collection, object and proxy paths: the shapes the API server serves, and refusals of bad input."""

from __future__ import annotations

import pytest

from outpost.kube import paths
from outpost.kube.paths import (
    DAEMON_SETS,
    LEASES,
    MUTATING_WEBHOOKS,
    NODE_METRICS,
    NODE_METRICS_K8S,
    NODES,
    POD_GROUPS,
    PODS,
    collection_path,
    kind_of,
    object_path,
)


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        (collection_path(NODES), "/api/v1/nodes"),
        (collection_path(PODS), "/api/v1/pods"),
        (collection_path(PODS, "kube-system"), "/api/v1/namespaces/kube-system/pods"),
        (collection_path(DAEMON_SETS, "koordinator-system"), "/apis/apps/v1/namespaces/koordinator-system/daemonsets"),
        (collection_path(NODE_METRICS), "/apis/slo.koordinator.sh/v1alpha1/nodemetrics"),
        (collection_path(NODE_METRICS_K8S), "/apis/metrics.k8s.io/v1beta1/nodes"),
        (
            object_path(LEASES, "kwok-node-0", "kube-node-lease"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/kwok-node-0",
        ),
        (
            object_path(MUTATING_WEBHOOKS, "kruise-mutating-webhook-configuration"),
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kruise-mutating-webhook-configuration",
        ),
        (
            object_path(POD_GROUPS, "gang-a", "default", subresource="status"),
            "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/podgroups/gang-a/status",
        ),
        (object_path(NODES, "kwok-node-3"), "/api/v1/nodes/kwok-node-3"),
        (
            object_path(kind_of("ClusterRoleBinding"), "system:outpost-probe"),
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:outpost-probe",
        ),
    ],
)
def test_paths(built: str, expected: str) -> None:
    assert built == expected


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: object_path(PODS, "web"), "namespaced: a namespace is required"),
        (lambda: object_path(PODS, "web", ""), "namespaced: a namespace is required"),
        (lambda: collection_path(NODES, "default"), "cluster-scoped"),
        (lambda: object_path(NODES, ""), "invalid Node name"),
        (lambda: object_path(NODES, "../secrets"), "invalid Node name"),
        (lambda: object_path(NODES, "a/b"), "invalid Node name"),
        (lambda: object_path(PODS, "web", "ns/x"), "invalid namespace"),
        (lambda: object_path(PODS, "web", "ns", subresource="a/b"), "invalid subresource"),
        (lambda: kind_of("Gizmo"), "unknown kind 'Gizmo'"),
    ],
)
def test_refusals(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


def test_kinds_cover_what_the_sandbox_applies() -> None:
    wanted = {
        "Namespace",
        "Service",
        "Secret",
        "ConfigMap",
        "ServiceAccount",
        "Event",
        "Node",
        "Pod",
        "Deployment",
        "DaemonSet",
        "Lease",
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "FlowSchema",
        "PriorityLevelConfiguration",
        "PodGroup",
        "NodeMetric",
        "EndpointSlice",
        "Endpoints",
    }
    assert wanted <= set(paths.KINDS)
    assert all(kind_of(name).kind == name for name in paths.KINDS)


def test_api_version() -> None:
    assert PODS.api_version == "v1"
    assert DAEMON_SETS.api_version == "apps/v1"


def test_cluster_seam_reexports_the_same_proxy_builders() -> None:
    from outpost import cluster

    assert cluster.pod_proxy is paths.pod_proxy
    assert cluster.service_proxy is paths.service_proxy
    assert cluster.node_proxy is paths.node_proxy
