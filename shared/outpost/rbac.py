"""RBAC of the probe identity (`outpost-probe`): the production read-only role the checks need.

It belongs to the product because it is what an operator binds in a real cluster; the sandbox
applies these same manifests to its probe user, so what the tests prove is what production grants.

Guarantees:
- `outpost-probe` is read-only: get/list/watch on what the checks read, `get` on the
  services/pods proxy subresources (component health endpoints) and on the health/metrics
  non-resource URLs (`/metrics` is all `apiserver-latency` needs). No Secret is readable through the
  ClusterRole; the one exception is namespaced and by name: `webhook-cert-expiry` reads the
  serving certificate a webhook serves from its certificate Secret (the API server does not show
  that certificate otherwise), so a Role in each webhook namespace grants `get` on exactly those
  Secret names (`WEBHOOK_CERT_SECRETS`), never list/watch, never another Secret. That Secret also
  holds the webhook's private key: the check keeps only the certificate value (see
  `outpost.checks.webhook_cert_expiry`); drop these Roles and set `serving_secrets: []` to avoid it.
- `nodes/proxy` lives in a separate, opt-in ClusterRole (`outpost-probe-node-proxy`) that is
  created but NOT bound: it reaches the kubelet API, so whoever needs per-node health endpoints
  binds it deliberately.
- The one right beyond reading: `create pods` in the probe's own namespace (`outpost-probe`, created
  here) and nowhere else, through a Role and RoleBinding in that namespace, for admission-dry-run.
  RBAC cannot tell a dry run from a real create, so the namespace is dedicated and empty, and Outpost's
  cluster seam can only send that create with `dryRun=All` (`Cluster.dry_run_create`).
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
PROBE_NAMESPACE = "outpost-probe"
DRY_RUN_ROLE = "outpost-probe-dry-run"
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
    ("metrics.k8s.io", ("nodes",)),  # node-utilization with source metrics.k8s.io (metrics-server)
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

WEBHOOK_CERT_ROLE = "outpost-probe-webhook-certs"
WEBHOOK_CERT_SECRETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (namespace, Secret names): where Koordinator and OpenKruise keep the pair their webhook serves.
    ("koordinator-system", ("webhook-certs",)),
    ("kruise-system", ("kruise-webhook-certs",)),
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
    return [probe_role, node_proxy_role, binding, *dry_run_manifests(), *webhook_cert_manifests()]


def dry_run_manifests(namespace: str = PROBE_NAMESPACE) -> list[dict[str, Any]]:
    """The probe's own namespace, and `create pods` in it alone (admission-dry-run's dry-run pods)."""
    labels = {"app.kubernetes.io/part-of": "outpost"}
    namespace_object = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": namespace,
            "labels": dict(labels),
            "annotations": {"outpost.dev/description": (
                "Outpost's admission dry-run pods are created here with dryRun=All (never stored). "
                "Keep it empty: the probe may create pods in this namespace only.")},
        },
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": DRY_RUN_ROLE, "namespace": namespace, "labels": dict(labels)},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": DRY_RUN_ROLE, "namespace": namespace, "labels": dict(labels)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": DRY_RUN_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": PROBE_USER}],
    }
    return [namespace_object, role, binding]


def webhook_cert_manifests() -> list[dict[str, Any]]:
    """A Role and RoleBinding per webhook namespace: `get` on the named certificate Secrets only."""
    labels = {"app.kubernetes.io/part-of": "outpost"}
    objects: list[dict[str, Any]] = []
    for namespace, names in WEBHOOK_CERT_SECRETS:
        objects.append({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": WEBHOOK_CERT_ROLE, "namespace": namespace, "labels": labels,
                         "annotations": {"outpost.dev/description": (
                             "webhook-cert-expiry: get on the webhook's serving-certificate Secret by name only "
                             "(the check keeps the certificate, never the key).")}},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": list(names), "verbs": ["get"]}],
        })
        objects.append({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": WEBHOOK_CERT_ROLE, "namespace": namespace, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": WEBHOOK_CERT_ROLE},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": PROBE_USER}],
        })
    return objects


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

    role, node_proxy, binding, *namespaced = manifests()
    return (
        "# Generated by outpost.rbac: read-only probe role and its binding.\n"
        + yaml.safe_dump(role, sort_keys=False)
        + "---\n"
        + "# nodes/proxy reaches the kubelet API and is powerful: this role is opt-in and NOT bound.\n"
        + yaml.safe_dump(node_proxy, sort_keys=False)
        + "---\n"
        + yaml.safe_dump(binding, sort_keys=False)
        + "---\n"
        + "# admission-dry-run: the probe's own namespace, and create pods (sent only as dryRun=All) there alone;\n"
        + "# webhook-cert-expiry: get on the webhook certificate Secrets, by name, in their namespaces.\n"
        + "---\n".join(yaml.safe_dump(obj, sort_keys=False) for obj in namespaced)
    )
