"""Where Kubernetes objects live on the API server: kinds, collection and object paths, proxy paths.

Paths are built only from a known `Kind`, and a wrong scope or a name that could escape its segment ("", "..",
"a/b") is a `ValueError`, so a configuration typo fails instead of reading another object. Proxy paths take the
`https:` prefix when asked: a TLS-only backend answers plain HTTP with a reset, which would read as "down"
(forms: docs/contracts.md "Kubernetes API server"). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

Scheme = Literal["http", "https"]

# DNS-1123 subdomain (names of most kinds) is a subset of this; RBAC and a few others allow ':' and
# upper case. What matters here is that a name is one safe path segment.
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._:@-]*[A-Za-z0-9])?$")


@dataclass(frozen=True)
class Kind:
    """One REST resource: `kind` as in manifests, `plural` as in paths."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """`apiVersion` as written in manifests: `v1` for the core group, `group/version` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def prefix(self) -> str:
        """`/api/v1` for the core group, `/apis/GROUP/VERSION` otherwise."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


NODES = Kind("Node", "", "v1", "nodes", namespaced=False)
PODS = Kind("Pod", "", "v1", "pods", namespaced=True)
SERVICES = Kind("Service", "", "v1", "services", namespaced=True)
ENDPOINTS = Kind("Endpoints", "", "v1", "endpoints", namespaced=True)
EVENTS = Kind("Event", "", "v1", "events", namespaced=True)
EVENTS_K8S_IO = Kind("Event", "events.k8s.io", "v1", "events", namespaced=True)
"""The same Events as `EVENTS`, in events.k8s.io/v1's shape (not in `KINDS`, which is keyed by kind)."""
NAMESPACES = Kind("Namespace", "", "v1", "namespaces", namespaced=False)
CONFIG_MAPS = Kind("ConfigMap", "", "v1", "configmaps", namespaced=True)
SECRETS = Kind("Secret", "", "v1", "secrets", namespaced=True)
SERVICE_ACCOUNTS = Kind("ServiceAccount", "", "v1", "serviceaccounts", namespaced=True)
ENDPOINT_SLICES = Kind("EndpointSlice", "discovery.k8s.io", "v1", "endpointslices", namespaced=True)
DEPLOYMENTS = Kind("Deployment", "apps", "v1", "deployments", namespaced=True)
DAEMON_SETS = Kind("DaemonSet", "apps", "v1", "daemonsets", namespaced=True)
LEASES = Kind("Lease", "coordination.k8s.io", "v1", "leases", namespaced=True)
CRDS = Kind("CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)
MUTATING_WEBHOOKS = Kind(
    "MutatingWebhookConfiguration",
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    namespaced=False,
)
VALIDATING_WEBHOOKS = Kind(
    "ValidatingWebhookConfiguration",
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    namespaced=False,
)
CLUSTER_ROLES = Kind("ClusterRole", "rbac.authorization.k8s.io", "v1", "clusterroles", namespaced=False)
CLUSTER_ROLE_BINDINGS = Kind(
    "ClusterRoleBinding", "rbac.authorization.k8s.io", "v1", "clusterrolebindings", namespaced=False
)
ROLES = Kind("Role", "rbac.authorization.k8s.io", "v1", "roles", namespaced=True)
ROLE_BINDINGS = Kind("RoleBinding", "rbac.authorization.k8s.io", "v1", "rolebindings", namespaced=True)
FLOW_SCHEMAS = Kind("FlowSchema", "flowcontrol.apiserver.k8s.io", "v1", "flowschemas", namespaced=False)
PRIORITY_LEVELS = Kind(
    "PriorityLevelConfiguration", "flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", namespaced=False
)
NODE_METRICS = Kind("NodeMetric", "slo.koordinator.sh", "v1alpha1", "nodemetrics", namespaced=False)
POD_GROUPS = Kind("PodGroup", "scheduling.sigs.k8s.io", "v1alpha1", "podgroups", namespaced=True)
CLUSTER_COLOCATION_PROFILES = Kind(
    "ClusterColocationProfile", "config.koordinator.sh", "v1alpha1", "clustercolocationprofiles", namespaced=False
)
PRIORITY_CLASSES = Kind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False)
NODE_METRICS_K8S = Kind("NodeMetrics", "metrics.k8s.io", "v1beta1", "nodes", namespaced=False)
"""The metrics-server resource metrics of nodes (its kind is `NodeMetrics`, its plural `nodes`)."""

KINDS: dict[str, Kind] = {
    k.kind: k
    for k in (
        NAMESPACES,
        NODES,
        PODS,
        SERVICES,
        ENDPOINTS,
        EVENTS,
        CONFIG_MAPS,
        SECRETS,
        SERVICE_ACCOUNTS,
        ENDPOINT_SLICES,
        DEPLOYMENTS,
        DAEMON_SETS,
        LEASES,
        CRDS,
        MUTATING_WEBHOOKS,
        VALIDATING_WEBHOOKS,
        CLUSTER_ROLES,
        CLUSTER_ROLE_BINDINGS,
        ROLES,
        ROLE_BINDINGS,
        FLOW_SCHEMAS,
        PRIORITY_LEVELS,
        NODE_METRICS,
        POD_GROUPS,
        NODE_METRICS_K8S,
        CLUSTER_COLOCATION_PROFILES,
        PRIORITY_CLASSES,
    )
}
"""Every kind Outpost (and its sandbox) reads or writes, by manifest `kind`."""


def kind_of(name: str) -> Kind:
    """The `Kind` called `name` (manifest spelling); ValueError naming the known kinds otherwise."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown kind {name!r} (known: {', '.join(sorted(KINDS))})") from None


def _segment(what: str, value: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value) or ".." in value:
        raise ValueError(f"invalid {what} for a path: {value!r}")
    return value


def collection_path(kind: Kind, namespace: str | None = None) -> str:
    """The collection of `kind`: in `namespace`, or across all namespaces when it is None.

    A cluster-scoped kind refuses a namespace (it would be a path the API server does not serve).
    """
    if namespace is None:
        return f"{kind.prefix}/{kind.plural}"
    if not kind.namespaced:
        raise ValueError(f"{kind.kind} is cluster-scoped: no namespace (got {namespace!r})")
    return f"{kind.prefix}/namespaces/{_segment('namespace', namespace)}/{kind.plural}"


def object_path(kind: Kind, name: str, namespace: str | None = None, subresource: str | None = None) -> str:
    """The path of one object (optionally a subresource such as `status` or `scale`)."""
    if kind.namespaced and not namespace:
        raise ValueError(f"{kind.kind} {name!r} is namespaced: a namespace is required")
    base = collection_path(kind, namespace)
    path = f"{base}/{_segment(kind.kind + ' name', name)}"
    if subresource:
        path += f"/{_segment('subresource', subresource)}"
    return path


def proxy_target(name: str, port: int | str | None = None, scheme: Scheme | None = None) -> str:
    """The proxy path segment `[https:]NAME[:PORT]`: also the object name RBAC sees for the request."""
    if not name or "/" in name:
        raise ValueError(f"invalid object name for a proxy path: {name!r}")
    prefix = f"{scheme}:" if scheme == "https" else ""
    suffix = f":{port}" if port not in (None, "") else ""
    return quote(f"{prefix}{name}{suffix}", safe=":")


def _tail(path: str) -> str:
    return path.lstrip("/")


def service_proxy(
    namespace: str, name: str, port: int | str | None = None, path: str = "", scheme: Scheme | None = None
) -> str:
    return f"/api/v1/namespaces/{namespace}/services/{proxy_target(name, port, scheme)}/proxy/{_tail(path)}"


def pod_proxy(
    namespace: str, name: str, port: int | str | None = None, path: str = "", scheme: Scheme | None = None
) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{proxy_target(name, port, scheme)}/proxy/{_tail(path)}"


def node_proxy(name: str, port: int | str | None = None, path: str = "", scheme: Scheme | None = None) -> str:
    return f"/api/v1/nodes/{proxy_target(name, port, scheme)}/proxy/{_tail(path)}"
