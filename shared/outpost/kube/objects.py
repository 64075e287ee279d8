"""Typed, read-only views of the Kubernetes objects checks read.

The API server omits zero values (`numberReady` absent means 0), so raw dict access fails exactly when the truth
is "none". Here an omitted field is its zero value or Kubernetes' own default, unknown fields are ignored, and a
field of the WRONG type raises `MalformedResponse` naming object and path ("could not observe", never ok).
Unknown enum-like values stay strings for the check to judge. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, Protocol, TypeVar

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from outpost.errors import MalformedResponse
from outpost.kube.conditions import AVAILABLE, READY, Condition, ConditionLike, find_condition, is_true
from outpost.kube.messages import ref
from outpost.kube.selectors import LabelSelector, Requirement
from outpost.kube.timestamps import FUTURE_SKEW_SECONDS, age_seconds


class View(BaseModel):
    """Base of every view: camelCase aliases, snake_case names, frozen, unknown fields ignored.

    `defer_build`: a view's validator is built when it is first used, not at import, so a function's cold
    start pays only for the kinds its one check reads (building all of them took most of the import)."""

    model_config = ConfigDict(
        extra="ignore", frozen=True, populate_by_name=True, alias_generator=to_camel, defer_build=True
    )


# -- metadata -------------------------------------------------------------------------------------


class OwnerReference(View):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


class ObjectMeta(View):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    creation_timestamp: AwareDatetime | None = None
    deletion_timestamp: AwareDatetime | None = None
    generation: int = 0
    owner_references: list[OwnerReference] = Field(default_factory=list)
    resource_version: str = ""

    def controller(self) -> OwnerReference | None:
        """The owner reference marked `controller: true`, if any."""
        return next((owner for owner in self.owner_references if owner.controller), None)


class ObjectReference(View):
    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    field_path: str = ""


class _Metadata(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def deletion_timestamp(self) -> datetime | None: ...


class _WithMetadata(Protocol):
    KIND: ClassVar[str]

    @property
    def metadata(self) -> _Metadata: ...


class Named:
    """`name`, `namespace` and `ref` of an object with `metadata` and a `KIND`: the pydantic views here and their
    msgspec mirrors in `fast_outlines` name objects the same way because they share this."""

    __slots__ = ()

    @property
    def name(self: _WithMetadata) -> str:
        return self.metadata.name

    @property
    def namespace(self: _WithMetadata) -> str:
        return self.metadata.namespace

    @property
    def ref(self: _WithMetadata) -> str:
        """`daemonset koordinator-system/koordlet`, the prefix of every message about this object."""
        return ref(self.KIND, self.metadata.name, self.metadata.namespace or None)


class _PodShaped(_WithMetadata, Protocol):
    @property
    def spec(self) -> _Placed: ...
    @property
    def status(self) -> _Conditioned: ...


class _Placed(Protocol):
    @property
    def node_name(self) -> str: ...


class _Conditioned(Protocol):
    @property
    def conditions(self) -> Sequence[ConditionLike]: ...


class PodFacts:
    """What every reading of a Pod answers alike (the full view, its outline and the outline's msgspec mirror)."""

    __slots__ = ()

    @property
    def ready(self: _PodShaped) -> bool:
        """The Ready condition is True (running alone is not ready)."""
        return is_true(self.status.conditions, READY)

    @property
    def terminating(self: _PodShaped) -> bool:
        return self.metadata.deletion_timestamp is not None

    @property
    def node_name(self: _PodShaped) -> str:
        return self.spec.node_name


class KubeObject(View, Named):
    """An object with metadata; `KIND` is its manifest kind (LIST items omit `kind`)."""

    KIND: ClassVar[str] = "Object"

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


# -- selectors as they appear in objects ---------------------------------------------------------------


class SelectorExpression(View):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class Selector(View):
    """The API shape of a label selector; `.selector` is the `LabelSelector` that matches."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[SelectorExpression] = Field(default_factory=list)

    @property
    def selector(self) -> LabelSelector:
        requirements = [Requirement(k, "In", (v,)) for k, v in self.match_labels.items()]
        requirements += [Requirement(e.key, e.operator, tuple(e.values)) for e in self.match_expressions]
        return LabelSelector(tuple(requirements))


# -- pods ---------------------------------------------------------------------------------------------


class Toleration(View):
    key: str = ""
    operator: str = "Equal"  # Kubernetes defaults an omitted operator to Equal
    value: str = ""
    effect: str = ""  # "" tolerates every effect
    toleration_seconds: int | None = None


class Taint(View):
    key: str
    value: str = ""
    effect: str = ""
    time_added: AwareDatetime | None = None

    def __str__(self) -> str:
        return f"{self.key}{'=' + self.value if self.value else ''}:{self.effect}"


class ContainerPort(View):
    name: str = ""
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"


class Container(View):
    name: str = ""
    image: str = ""
    ports: list[ContainerPort] = Field(default_factory=list)


class PodReadinessGate(View):
    condition_type: str = ""


class PodSpec(View):
    node_name: str = ""
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    affinity: dict[str, Any] = Field(default_factory=dict)
    host_network: bool = False
    containers: list[Container] = Field(default_factory=list)
    scheduler_name: str = ""
    priority_class_name: str = ""
    readiness_gates: list[PodReadinessGate] = Field(default_factory=list)


class ContainerStatus(View):
    name: str = ""
    ready: bool = False
    started: bool | None = None
    restart_count: int = 0
    image: str = ""
    state: dict[str, Any] = Field(default_factory=dict)

    @property
    def state_name(self) -> str:
        """`running`, `waiting`, `terminated`, or "" when unreported."""
        return next(iter(self.state), "")


class PodStatus(View):
    phase: str = ""  # Pending, Running, Succeeded, Failed, Unknown; anything else is kept as is
    reason: str = ""
    message: str = ""
    pod_ip: str = Field("", alias="podIP")
    host_ip: str = Field("", alias="hostIP")
    start_time: AwareDatetime | None = None
    conditions: list[Condition] = Field(default_factory=list)
    container_statuses: list[ContainerStatus] = Field(default_factory=list)


class PodTemplate(View):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)


class Pod(KubeObject, PodFacts):
    KIND: ClassVar[str] = "Pod"

    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)


class PodPlacementSpec(View):
    node_name: str = ""


class PodReadinessStatus(View):
    phase: str = ""
    conditions: list[Condition] = Field(default_factory=list)


class PodOutline(KubeObject, PodFacts):
    """What coverage reads of a Pod (name, node, phase, Ready condition, deletion): a LIST validated into this
    never builds the containers, volumes and affinity each pod carries."""

    KIND: ClassVar[str] = "Pod"

    spec: PodPlacementSpec = Field(default_factory=PodPlacementSpec)
    status: PodReadinessStatus = Field(default_factory=PodReadinessStatus)


class PodSchedulingSpec(View):
    node_name: str = ""
    scheduler_name: str = ""


class ContainerTerminated(View):
    exit_code: int = 0
    signal: int = 0
    reason: str = ""
    finished_at: AwareDatetime | None = None


class ContainerEndState(View):
    terminated: ContainerTerminated | None = None


class ContainerEnd(View):
    """A container status reduced to how it ended, if it did."""

    name: str = ""
    state: ContainerEndState = Field(default_factory=ContainerEndState)


class PodSchedulingStatus(View):
    phase: str = ""
    reason: str = ""
    message: str = ""
    conditions: list[Condition] = Field(default_factory=list)
    init_container_statuses: list[ContainerEnd] = Field(default_factory=list)
    container_statuses: list[ContainerEnd] = Field(default_factory=list)


class PodSchedulingOutline(KubeObject):
    """What scheduling checks read of a Pod (labels and annotations, node, scheduler, phase, conditions, how its
    containers ended): a LIST validated into this never builds their specs, volumes and affinity."""

    KIND: ClassVar[str] = "Pod"

    spec: PodSchedulingSpec = Field(default_factory=PodSchedulingSpec)
    status: PodSchedulingStatus = Field(default_factory=PodSchedulingStatus)

    @property
    def terminating(self) -> bool:
        return self.metadata.deletion_timestamp is not None

    @property
    def node_name(self) -> str:
        return self.spec.node_name


# -- workloads ----------------------------------------------------------------------------------------


class WorkloadSpec(View):
    selector: Selector = Field(default_factory=Selector)
    template: PodTemplate = Field(default_factory=PodTemplate)


class WorkloadStatus(View):
    observed_generation: int = 0
    conditions: list[Condition] = Field(default_factory=list)


class Workload(KubeObject):
    """What a Deployment and a DaemonSet share: a selector, a pod template and the generation the controller saw."""

    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)

    @property
    def observed_current(self) -> bool:
        """The controller has seen the latest spec (status.observedGeneration >= metadata.generation)."""
        return self.status.observed_generation >= self.metadata.generation


class DeploymentSpec(WorkloadSpec):
    replicas: int = 1  # Kubernetes defaults an omitted spec.replicas to 1


class DeploymentStatus(WorkloadStatus):
    replicas: int = 0
    updated_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    unavailable_replicas: int = 0


class Deployment(Workload):
    KIND: ClassVar[str] = "Deployment"

    spec: DeploymentSpec = Field(default_factory=DeploymentSpec)
    status: DeploymentStatus = Field(default_factory=DeploymentStatus)

    @property
    def available(self) -> bool:
        return is_true(self.status.conditions, AVAILABLE)


class DaemonSetStatus(WorkloadStatus):
    desired_number_scheduled: int = 0
    current_number_scheduled: int = 0
    number_ready: int = 0
    number_available: int = 0
    number_unavailable: int = 0
    updated_number_scheduled: int = 0
    number_misscheduled: int = 0


class DaemonSet(Workload):
    KIND: ClassVar[str] = "DaemonSet"

    status: DaemonSetStatus = Field(default_factory=DaemonSetStatus)


# -- nodes --------------------------------------------------------------------------------------------


class NodeAddress(View):
    type: str = ""
    address: str = ""


class NodeSpec(View):
    unschedulable: bool = False
    taints: list[Taint] = Field(default_factory=list)
    provider_id: str = Field("", alias="providerID")
    pod_cidr: str = Field("", alias="podCIDR")


class NodeStatus(View):
    conditions: list[Condition] = Field(default_factory=list)
    addresses: list[NodeAddress] = Field(default_factory=list)
    capacity: dict[str, str | int] = Field(default_factory=dict)
    allocatable: dict[str, str | int] = Field(default_factory=dict)


class Node(KubeObject):
    KIND: ClassVar[str] = "Node"

    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def ready(self) -> bool:
        return is_true(self.status.conditions, READY)

    @property
    def ready_condition(self) -> Condition | None:
        return find_condition(self.status.conditions, READY)

    def address(self, type_: str = "InternalIP") -> str:
        return next((a.address for a in self.status.addresses if a.type == type_), "")


class NodeSchedulingSpec(View):
    unschedulable: bool = False


class NodeReadinessStatus(View):
    conditions: list[Condition] = Field(default_factory=list)
    allocatable: dict[str, str | int] = Field(default_factory=dict)


class NodeOutline(KubeObject):
    """What node selection reads of a Node (metadata, cordon, conditions, allocatable): a LIST validated into this
    never builds the images, addresses and daemon endpoints each node carries."""

    KIND: ClassVar[str] = "Node"

    spec: NodeSchedulingSpec = Field(default_factory=NodeSchedulingSpec)
    status: NodeReadinessStatus = Field(default_factory=NodeReadinessStatus)


# -- leases -------------------------------------------------------------------------------------------


class LeaseSpec(View):
    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: AwareDatetime | None = None
    renew_time: AwareDatetime | None = None
    lease_transitions: int = 0


class Lease(KubeObject):
    KIND: ClassVar[str] = "Lease"

    spec: LeaseSpec = Field(default_factory=LeaseSpec)

    def age_seconds(self, now: datetime) -> float | None:
        """Seconds since the last renewal (negative under clock skew); None if never renewed."""
        return age_seconds(self.spec.renew_time, now)

    def renewed_within(self, now: datetime, seconds: float, max_future_skew: float = FUTURE_SKEW_SECONDS) -> bool:
        """Renewed no longer than `seconds` ago. Never renewed is False; so is a renewal further in the future than
        `max_future_skew` (no clock is that far off, and a holder that stopped would hide until then)."""
        age = self.age_seconds(now)
        return age is not None and -max_future_skew <= age <= seconds

    def expired(self, now: datetime, slack: float = 0.0, max_future_skew: float = FUTURE_SKEW_SECONDS) -> bool:
        """Not renewed within its own `leaseDurationSeconds` (+ `slack`), or renewed implausibly far in the future;
        a lease without a duration is expired."""
        return not self.spec.lease_duration_seconds or not self.renewed_within(
            now, self.spec.lease_duration_seconds + slack, max_future_skew
        )


# -- services and endpoints ---------------------------------------------------------------------------


class ServicePort(View):
    name: str = ""
    port: int = 0
    target_port: int | str = 0
    protocol: str = "TCP"


class ServiceSpec(View):
    selector: dict[str, str] = Field(default_factory=dict)
    ports: list[ServicePort] = Field(default_factory=list)
    cluster_ip: str = Field("", alias="clusterIP")
    type: str = "ClusterIP"


class Service(KubeObject):
    KIND: ClassVar[str] = "Service"

    spec: ServiceSpec = Field(default_factory=ServiceSpec)

    def port(self, port: int) -> ServicePort | None:
        return next((p for p in self.spec.ports if p.port == port), None)


class EndpointAddress(View):
    ip: str = ""
    hostname: str = ""
    node_name: str = ""
    target_ref: ObjectReference | None = None


class EndpointPort(View):
    name: str = ""
    port: int | None = None
    protocol: str = "TCP"


class EndpointSubset(View):
    addresses: list[EndpointAddress] = Field(default_factory=list)
    not_ready_addresses: list[EndpointAddress] = Field(default_factory=list)
    ports: list[EndpointPort] = Field(default_factory=list)


class Endpoints(KubeObject):
    KIND: ClassVar[str] = "Endpoints"

    subsets: list[EndpointSubset] = Field(default_factory=list)

    @property
    def ready_addresses(self) -> list[EndpointAddress]:
        return [a for s in self.subsets for a in s.addresses]

    @property
    def not_ready_addresses(self) -> list[EndpointAddress]:
        return [a for s in self.subsets for a in s.not_ready_addresses]

    @property
    def ready_count(self) -> int:
        return len(self.ready_addresses)


class EndpointConditions(View):
    ready: bool | None = None
    serving: bool | None = None
    terminating: bool | None = None


class SliceEndpoint(View):
    addresses: list[str] = Field(default_factory=list)
    conditions: EndpointConditions = Field(default_factory=EndpointConditions)
    hostname: str = ""
    node_name: str = ""
    zone: str = ""
    target_ref: ObjectReference | None = None

    @property
    def ready(self) -> bool:
        """Per the EndpointSlice API: a nil `ready` is an unknown state that consumers should treat as ready."""
        return self.conditions.ready is not False


SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def _null_as_empty(value: object) -> object:
    return [] if value is None else value


class EndpointSlice(KubeObject):
    """`endpoints` and `ports` have no `omitempty` (`k8s.io/api@v0.37.2, discovery/v1/types.go`), so the slice of a
    Service with no backends (its Deployment scaled to 0) says `"endpoints": null`: that is an empty list here, and a
    webhook with no endpoints is judged, not "could not observe"."""

    KIND: ClassVar[str] = "EndpointSlice"

    address_type: str = ""
    endpoints: Annotated[list[SliceEndpoint], BeforeValidator(_null_as_empty)] = Field(default_factory=list)
    ports: Annotated[list[EndpointPort], BeforeValidator(_null_as_empty)] = Field(default_factory=list)

    @property
    def service_name(self) -> str:
        return self.metadata.labels.get(SERVICE_NAME_LABEL, "")

    @property
    def ready_endpoints(self) -> list[SliceEndpoint]:
        return [e for e in self.endpoints if e.ready]


# -- admission webhooks -------------------------------------------------------------------------------


class ServiceReference(View):
    namespace: str = ""
    name: str = ""
    port: int = 443  # Kubernetes defaults the webhook service port to 443
    path: str | None = None


class WebhookClientConfig(View):
    service: ServiceReference | None = None
    url: str | None = None
    ca_bundle: str = ""


class RuleWithOperations(View):
    operations: list[str] = Field(default_factory=list)
    api_groups: list[str] = Field(default_factory=list)
    api_versions: list[str] = Field(default_factory=list)
    resources: list[str] = Field(default_factory=list)
    scope: str = "*"


class Webhook(View):
    name: str = ""
    client_config: WebhookClientConfig = Field(default_factory=WebhookClientConfig)
    failure_policy: str = "Fail"  # the admissionregistration/v1 default
    side_effects: str = ""
    match_policy: str = "Equivalent"
    timeout_seconds: int = 10
    rules: list[RuleWithOperations] = Field(default_factory=list)
    namespace_selector: Selector | None = None
    object_selector: Selector | None = None
    admission_review_versions: list[str] = Field(default_factory=list)
    reinvocation_policy: str = ""

    def points_at(self, namespace: str, name: str) -> bool:
        service = self.client_config.service
        return service is not None and service.namespace == namespace and service.name == name


class WebhookConfiguration(KubeObject):
    """A Mutating- or ValidatingWebhookConfiguration (same shape for what checks read)."""

    KIND: ClassVar[str] = "WebhookConfiguration"

    webhooks: list[Webhook] = Field(default_factory=list)

    @property
    def ref(self) -> str:
        return ref(self.kind or self.KIND, self.metadata.name)

    def webhooks_for(self, namespace: str, service: str) -> list[Webhook]:
        """The webhooks served by Service `namespace/service`."""
        return [w for w in self.webhooks if w.points_at(namespace, service)]


# -- events -------------------------------------------------------------------------------------------


class EventSeries(View):
    count: int = 0
    last_observed_time: AwareDatetime | None = None


class EventSource(View):
    component: str = ""
    host: str = ""


class Event(KubeObject):
    """A core/v1 Event (what `/api/v1/events` returns; events.k8s.io/v1 fields map onto it)."""

    KIND: ClassVar[str] = "Event"

    involved_object: ObjectReference = Field(default_factory=ObjectReference)
    reason: str = ""
    message: str = ""
    type: str = ""
    count: int = 0
    first_timestamp: AwareDatetime | None = None
    last_timestamp: AwareDatetime | None = None
    event_time: AwareDatetime | None = None
    series: EventSeries | None = None
    source: EventSource = Field(default_factory=EventSource)
    reporting_component: str = ""
    action: str = ""

    @property
    def last_seen(self) -> datetime | None:
        """When this event last happened: the series' last observation, else lastTimestamp, eventTime,
        firstTimestamp, and finally the object's creation (each writer fills a different subset)."""
        if self.series and self.series.last_observed_time:
            return self.series.last_observed_time
        return self.last_timestamp or self.event_time or self.first_timestamp or self.metadata.creation_timestamp

    @property
    def occurrences(self) -> int:
        """How many times it happened (at least 1: an Event exists because it happened)."""
        return max(1, self.series.count if self.series and self.series.count else self.count)


_EVENTS_V1_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedCount": "count",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedSource": "source",
    "reportingController": "reportingComponent",
}
"""events.k8s.io/v1 field names and their core/v1 equivalents (the same stored object, two shapes)."""


def core_event_shape(raw: Mapping[str, Any]) -> dict[str, Any]:
    """An Event as core/v1 spells it, whichever API served it.

    Why: `/apis/events.k8s.io/v1/events` returns the same stored Events as `/api/v1/events` under other
    names (`regarding`, `note`, `deprecatedLastTimestamp`, ...); renaming them here lets one `Event` view
    (and its `last_seen`) judge both. A core/v1 object passes through unchanged; a field present under
    both names keeps its core/v1 value.
    """
    shaped = dict(raw)
    for new_name, core_name in _EVENTS_V1_TO_CORE.items():
        if new_name in shaped:
            value = shaped.pop(new_name)
            shaped.setdefault(core_name, value)
    return shaped


# -- Koordinator / scheduler-plugins CRDs -------------------------------------------------------------


class NodeMetricStatus(View):
    update_time: AwareDatetime | None = None
    node_metric: dict[str, Any] = Field(default_factory=dict)
    pods_metric: list[dict[str, Any]] = Field(default_factory=list)


class NodeMetric(KubeObject):
    """Koordinator's per-node usage report (`slo.koordinator.sh/v1alpha1`), named after its node."""

    KIND: ClassVar[str] = "NodeMetric"

    status: NodeMetricStatus = Field(default_factory=NodeMetricStatus)

    def age_seconds(self, now: datetime) -> float | None:
        """Seconds since `status.updateTime` (negative under clock skew); None if never updated."""
        return age_seconds(self.status.update_time, now)

    @property
    def node_usage(self) -> dict[str, Any]:
        """`status.nodeMetric.nodeUsage.resources` (e.g. `{"cpu": "2500m", "memory": "3Gi"}`)."""
        return _node_usage(self.status.node_metric)


def _node_usage(node_metric: Mapping[str, Any]) -> dict[str, Any]:
    usage = node_metric.get("nodeUsage") or {}
    resources = usage.get("resources") if isinstance(usage, Mapping) else None
    return dict(resources) if isinstance(resources, Mapping) else {}


class NodeUsageStatus(View):
    update_time: AwareDatetime | None = None
    node_metric: dict[str, Any] = Field(default_factory=dict)


class NodeMetricOutline(KubeObject):
    """What node checks read of a NodeMetric (its update time and the node's usage): a NodeMetric also carries
    the usage of every pod of its node, which a LIST validated into this never builds."""

    KIND: ClassVar[str] = "NodeMetric"

    status: NodeUsageStatus = Field(default_factory=NodeUsageStatus)

    @property
    def node_usage(self) -> dict[str, Any]:
        """`status.nodeMetric.nodeUsage.resources` (e.g. `{"cpu": "2500m", "memory": "3Gi"}`)."""
        return _node_usage(self.status.node_metric)


class PodGroupSpec(View):
    min_member: int = 0
    schedule_timeout_seconds: int | None = None  # unset: the scheduler's default; 0 is a wait time of 0
    min_resources: dict[str, Any] = Field(default_factory=dict)


class PodGroupStatus(View):
    phase: str = ""  # Pending, PreScheduling, Scheduling, Scheduled, Running, Finished, Failed, Unknown
    occupied_by: str = ""
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: AwareDatetime | None = None


class ManagedFieldsEntry(View):
    """One `metadata.managedFields` entry: who last changed which fields, and when."""

    manager: str = ""
    operation: str = ""
    subresource: str = ""
    time: AwareDatetime | None = None
    fields_v1: dict[str, Any] = Field(default_factory=dict, alias="fieldsV1")

    def owns(self, *path: str) -> bool:
        """Whether this entry owns the field at `path` (`"status", "phase"`), in its `fieldsV1` tree."""
        node: Any = self.fields_v1
        for name in path:
            if not isinstance(node, dict) or f"f:{name}" not in node:
                return False
            node = node[f"f:{name}"]
        return True


class PodGroupMeta(ObjectMeta):
    """A PodGroup's metadata with its managedFields: a PodGroup has no conditions, so the entry that owns
    `status.phase` is the only record of when the phase was last written."""

    managed_fields: list[ManagedFieldsEntry] = Field(default_factory=list)


class PodGroup(KubeObject):
    KIND: ClassVar[str] = "PodGroup"

    metadata: PodGroupMeta = Field(default_factory=PodGroupMeta)
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)

    @property
    def phase_written_at(self) -> datetime | None:
        """When `status.phase` was last changed: the newest time of the managedFields entries that own it
        (the API server moves an entry's time only when that manager changed the object); None if unrecorded."""
        times = [
            entry.time
            for entry in self.metadata.managed_fields
            if entry.time is not None and entry.owns("status", "phase")
        ]
        return max(times, default=None)


# -- parsing ------------------------------------------------------------------------------------------

V = TypeVar("V", bound=View)


def _name_of(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata")
    if not isinstance(metadata, Mapping):
        return "(unnamed)"
    name, namespace = metadata.get("name"), metadata.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name or "(unnamed)")


def parse(model: type[V], raw: Any, where: str) -> V:
    """`raw` (decoded JSON) as a `model` view.

    A wrong type is `MalformedResponse("<where>: <kind> <ns>/<name>: field <path>: <why>")`: we could not
    observe the object. An omitted field is not an error; it is its zero value.
    """
    kind = getattr(model, "KIND", model.__name__).lower()
    if not isinstance(raw, Mapping):
        raise MalformedResponse(f"{where}: {kind}: expected a JSON object, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(object)"
        got = repr(first.get("input"))[:60]
        more = f" (+{error.error_count() - 1} more)" if error.error_count() > 1 else ""
        raise MalformedResponse(
            f"{where}: {kind} {_name_of(raw)}: field {field}: {first['msg']} (got {got}){more}"
        ) from None


def parse_list(model: type[V], raw: Any, where: str) -> list[V]:
    """The views of a LIST response's `items` (or of a plain list of items)."""
    items = raw.get("items") if isinstance(raw, Mapping) else raw
    if not isinstance(items, list):
        raise MalformedResponse(f"{where}: expected a list of items")
    return parse_items(model, items, where)


def parse_items(model: type[V], items: Iterable[Any], where: str) -> list[V]:
    return [parse(model, item, where) for item in items]
