"""RBAC of the probe identity (`outpost-probe`): the production read-only role the checks need.

It belongs to the product because it is what an operator binds in a real cluster; the sandbox
applies these same manifests to its probe user, so what the tests prove is what production grants.

Guarantees:
- `outpost-probe` is read-only: get/list/watch on what the checks read, `get` on the
  services/pods proxy subresources (component health endpoints) and on the health/metrics
  non-resource URLs. It never reads Secrets: webhook and serving certificates are judged from
  what the API publishes (caBundle, the TLS handshake through the proxy), not from private keys.
- `nodes/proxy` lives in a separate, opt-in ClusterRole (`outpost-probe-node-proxy`) that is
  created but NOT bound: it reaches the kubelet API, so whoever needs per-node health endpoints
  binds it deliberately.
- The `kwok-pod-reconciler` job writes, so it never runs as the probe: `outpost-reconciler` is an
  identity of its own whose role (`reconciler_manifests`) is exactly what the job does: get/list
  nodes (which are fake), list pods (which are Pending), patch pods/status. Nothing else: no pod
  create/delete/update, no spec, no other resource.
"""

from __future__ import annotations

from typing import Any

PROBE_USER = "outpost-probe"
PROBE_ROLE = "outpost-probe"
NODE_PROXY_ROLE = "outpost-probe-node-proxy"
RECONCILER_USER = "outpost-reconciler"
RECONCILER_ROLE = "outpost-reconciler"

_READ = ["get", "list", "watch"]

# (apiGroup, resources) the checks read. Kept explicit instead of "*" so a new resource type is a
# reviewed change, and so `secrets` can never slip in through a wildcard.
_READ_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("nodes", "pods", "services", "endpoints", "events", "namespaces", "configmaps")),
    ("apps", ("deployments", "daemonsets", "statefulsets", "replicasets")),
    ("coordination.k8s.io", ("leases",)),
    ("discovery.k8s.io", ("endpointslices",)),
    ("events.k8s.io", ("events",)),
    ("admissionregistration.k8s.io", ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")),
    ("apiextensions.k8s.io", ("customresourcedefinitions",)),
    ("slo.koordinator.sh", ("nodemetrics", "nodeslos")),
    ("scheduling.sigs.k8s.io", ("podgroups", "elasticquotas")),
    ("scheduling.koordinator.sh", ("reservations", "devices")),
    ("config.koordinator.sh", ("clustercolocationprofiles",)),
    ("apps.kruise.io", (
        "clonesets", "advancedcronjobs", "broadcastjobs", "daemonsets", "statefulsets",
        "sidecarsets", "nodeimages", "imagepulljobs", "uniteddeployments", "workloadspreads",
        "containerrecreaterequests", "resourcedistributions", "ephemeraljobs", "persistentpodstates",
        "podprobemarkers", "nodepodprobes",
    )),
    ("policy.kruise.io", ("podunavailablebudgets",)),
)

_NON_RESOURCE_URLS = ["/livez", "/livez*", "/readyz", "/readyz*", "/metrics", "/version"]


def manifests() -> list[dict[str, Any]]:
    """The ClusterRoles and the one ClusterRoleBinding, as API objects."""
    rules: list[dict[str, Any]] = [
        {"apiGroups": [group], "resources": list(resources), "verbs": list(_READ)}
        for group, resources in _READ_RULES
    ]
    rules.append({"apiGroups": [""], "resources": ["services/proxy", "pods/proxy"], "verbs": ["get"]})
    rules.append({"nonResourceURLs": list(_NON_RESOURCE_URLS), "verbs": ["get"]})
    probe_role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": PROBE_ROLE,
            "labels": {"app.kubernetes.io/part-of": "outpost"},
            "annotations": {
                "outpost.dev/description": (
                    "Read-only access for Outpost health checks. No secrets, no nodes/proxy "
                    "(see outpost-probe-node-proxy)."
                ),
            },
        },
        "rules": rules,
    }
    node_proxy_role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": NODE_PROXY_ROLE,
            "labels": {"app.kubernetes.io/part-of": "outpost"},
            "annotations": {
                "outpost.dev/description": (
                    "OPT-IN and POWERFUL: nodes/proxy reaches the kubelet API of every node "
                    "(including exec/run paths on real kubelets). Bind only for checks that need "
                    "per-node health endpoints; not bound by default."
                ),
            },
        },
        "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": PROBE_ROLE, "labels": {"app.kubernetes.io/part-of": "outpost"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": PROBE_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": PROBE_USER}],
    }
    return [probe_role, node_proxy_role, binding]


def reconciler_manifests() -> list[dict[str, Any]]:
    """The `kwok-pod-reconciler` job's ClusterRole and its binding to `outpost-reconciler`."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": RECONCILER_ROLE,
            "labels": {"app.kubernetes.io/part-of": "outpost"},
            "annotations": {
                "outpost.dev/description": (
                    "kwok-pod-reconciler only: reads nodes and pods, patches pods/status (Pending pods on "
                    "KWOK fake nodes to Running). Bind to the job's own identity, never to the probe."
                ),
            },
        },
        "rules": [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": RECONCILER_ROLE, "labels": {"app.kubernetes.io/part-of": "outpost"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": RECONCILER_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": RECONCILER_USER}],
    }
    return [role, binding]


def yaml_text() -> str:
    """The manifests as one multi-document YAML, with the node-proxy warning as a comment."""
    import yaml

    role, node_proxy, binding = manifests()
    return (
        "# Generated by outpost.rbac: read-only probe role and its binding.\n"
        + yaml.safe_dump(role, sort_keys=False)
        + "---\n"
        + "# nodes/proxy reaches the kubelet API and is powerful: this role is opt-in and NOT bound.\n"
        + yaml.safe_dump(node_proxy, sort_keys=False)
        + "---\n"
        + yaml.safe_dump(binding, sort_keys=False)
    )
