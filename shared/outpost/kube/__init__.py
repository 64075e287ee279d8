"""Kubernetes vocabulary shared by every check: pure (no I/O), typed, unit-tested.

Paths of kinds and proxies, timestamps and ages (with `now` passed in), quantities, label and
metadata selectors, conditions, typed object views with Kubernetes zero defaults (`parse` turns a
wrong type into `MalformedResponse`), node classification and tolerations, health-body lines, and
one message form: `<kind> <ns>/<name>: observed X (want Y)`.

Layering: imports only `outpost.errors`; `outpost.cluster` and `outpost.checks` build on it.
"""

from outpost.kube.conditions import AVAILABLE, ESTABLISHED, PROGRESSING, READY, Condition, find_condition, is_true
from outpost.kube.health import HealthLine, parse_health_body
from outpost.kube.messages import observed, ref
from outpost.kube.nodes import NodeClass, blocking_taints, classify, is_schedulable, tolerates, untolerated
from outpost.kube.objects import (
    DaemonSet,
    Deployment,
    Endpoints,
    EndpointSlice,
    Event,
    KubeObject,
    Lease,
    Node,
    NodeMetric,
    ObjectMeta,
    Pod,
    PodGroup,
    Service,
    WebhookConfiguration,
    core_event_shape,
    parse,
    parse_items,
    parse_list,
)
from outpost.kube.paths import (
    CONFIG_MAPS,
    CRDS,
    DAEMON_SETS,
    DEPLOYMENTS,
    ENDPOINT_SLICES,
    ENDPOINTS,
    EVENTS,
    EVENTS_K8S_IO,
    KINDS,
    LEASES,
    MUTATING_WEBHOOKS,
    NAMESPACES,
    NODE_METRICS,
    NODE_METRICS_K8S,
    NODES,
    POD_GROUPS,
    PODS,
    SERVICES,
    VALIDATING_WEBHOOKS,
    Kind,
    collection_path,
    kind_of,
    node_proxy,
    object_path,
    pod_proxy,
    service_proxy,
)
from outpost.kube.quantity import cpu_millis, memory_bytes, parse_quantity
from outpost.kube.selectors import LabelSelector, MetadataSelector, parse_label_selector
from outpost.kube.timestamps import age_seconds, format_time, parse_time

__all__ = [
    "AVAILABLE", "CONFIG_MAPS", "CRDS", "DAEMON_SETS", "DEPLOYMENTS", "ENDPOINTS", "ENDPOINT_SLICES",
    "ESTABLISHED", "EVENTS", "EVENTS_K8S_IO", "KINDS", "LEASES", "MUTATING_WEBHOOKS", "NAMESPACES", "NODES",
    "NODE_METRICS",
    "NODE_METRICS_K8S", "PODS", "POD_GROUPS", "PROGRESSING", "READY", "SERVICES", "VALIDATING_WEBHOOKS",
    "Condition", "DaemonSet", "Deployment", "EndpointSlice", "Endpoints", "Event", "HealthLine", "Kind",
    "KubeObject", "LabelSelector", "Lease", "MetadataSelector", "Node", "NodeClass", "NodeMetric", "ObjectMeta",
    "Pod", "PodGroup", "Service", "WebhookConfiguration", "age_seconds", "blocking_taints", "classify",
    "collection_path", "core_event_shape", "cpu_millis", "find_condition", "format_time", "is_schedulable",
    "is_true", "kind_of",
    "memory_bytes", "node_proxy", "object_path", "observed", "parse", "parse_health_body", "parse_items",
    "parse_label_selector", "parse_list", "parse_quantity", "parse_time", "pod_proxy", "ref", "service_proxy",
    "tolerates", "untolerated",
]
