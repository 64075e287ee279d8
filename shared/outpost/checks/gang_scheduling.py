"""gang-scheduling: does a Koordinator gang really fail to schedule, or has one really lost its quorum, now?

A gang is a PodGroup (`scheduling.sigs.k8s.io/v1alpha1`) or pods naming one by annotation, with koord-scheduler's
rules (github.com/koordinator-sh/koordinator@v1.6.0, `coscheduling/` = `pkg/scheduler/plugins/coscheduling/`; the
kube-scheduler it embeds is k8s.io/kubernetes@v1.28.7). A PodGroup's status is not current: koord never sees a
finished pod, so v1.6.0 never writes `Failed` or `Finished`, and its counters stay stale after a member fails
until another event (docs/contracts.md "Koordinator", PodGroup). So verdicts about NOW come from the member pods,
and from the phase only where it can be current:
- **stuck** (failed): members wait unbound past the gang's wait time, either at least as many as the gang still
  needs placed together or any that koord-scheduler found unschedulable (`PodScheduled=False`, `Unschedulable` or
  `SchedulerError`, not koord's own "gang child pod not collect enough" hold). A member waits since its
  `PodScheduled=False` transition or, never tried, since creation. The wait time is the gang's own, shorter or
  longer: a PodGroup's `spec.scheduleTimeoutSeconds` when set and not negative (0 included,
  `coscheduling/util/gang_helper.go` GetWaitTimeDuration), a pod-declared gang's annotation
  `gang.scheduling.koordinator.sh/waiting-time` when Go parses it above 0 (`coscheduling/core/gang.go`
  tryInitByPodConfig); else `stuck_after_seconds`, koord's `CoschedulingArgs.defaultTimeout` (600 s,
  `pkg/scheduler/apis/config/v1/defaults.go`, which neither shipped config overrides);
- **quorum**, per the gang's match policy (annotation `gang.scheduling.koordinator.sh/match-policy`, on a pod also
  `pod-group.scheduling.sigs.k8s.io/match-policy`, on a PodGroup its own annotation; anything else is
  `once-satisfied`: `core/gang.go` tryInitByPodConfig / tryInitByPodGroup). A member counts bound while it has a
  node and has not finished, as koord's `BoundChildren` does (its pod informer holds no Succeeded or Failed pod).
  `once-satisfied` and `waiting-and-running`: with minMember bound (counted from the pods, whatever a PodGroup's
  stale phase says) whoever waits is beyond the quorum, placed one by one for capacity (`core/core.go`
  PreEnqueue, PreFilter; `core/gang.go` isGangValidForPermit), so an elastic gang (`total-number` above
  minMember) whose spares wait is ok; with fewer, the waiting members need minMember less the bound ones placed
  together. (koord's once-satisfied flag is set by any one binding, `core/gang.go` addBoundPod; a gang with fewer
  than minMember bound is still judged, as it runs short of its quorum. Finished members do not count: koord
  forgets them when it restarts or the gang empties.) `only-waiting`: bound members never count, a member passes
  Permit only while minMember members, itself included, wait there together, so its spares are a gang of their
  own. Gang groups (`.../groups`) share koord's once-satisfied flag, which these rules do not depend on. A member
  past its wait time whose namespace's Running pods were not read is `error` (the probe's clock went back);
- **incomplete** (failed only with `fail_incomplete`): fewer members wait, untried, than the gang still needs
  (minMember, less the bound ones where the policy counts them), held by koord; listed in `details.incomplete`
  (Pending PodGroups without waiting members: `details.pending_without_members`);
- **member failed** (failed): a member turned `Failed` within `failed_window_seconds` (default 3600 s; at its
  newest container `finishedAt` or `Ready=False` transition, neither recorded counts as recent) and the Running
  plus Succeeded members are fewer than minMember, koord's quorum rule; still at minMember `degraded`; older
  failures in `details.stale_failed`. The window must outlast the monitor's grace (11-12 min at 5 min) so a
  failure alerts once, then clears;
- **PodGroup Failed** (failed), for a status something other than koord v1.6.0 writes: the newest managedFields
  entry owning `status.phase` within the window (unrecorded counts as recent) and running + succeeded < minMember;
- `Unknown` is `degraded`; a phase upstream does not define is `error`, unless a failure is also seen.

Members are found as `coscheduling/util/gang_helper.go` GetGangNameByPod finds them (label
`pod-group.scheduling.sigs.k8s.io`, its deprecated `/name` form, else annotation `gang.scheduling.koordinator.sh/name`,
in the pod's namespace); a PodGroup of that name wins, else the first of the pods declares the gang (`min-available`,
`total-number`, `match-policy`, `waiting-time`, as `tryInitByPodConfig` reads them), and a gang koord never
initialises counts minMember 1 and nothing bound. Only waiting and failed pods of `scheduler_names` (default
`koord-scheduler`) are judged; running and succeeded members count whatever their scheduler. Pods held by
`schedulingGates` or being deleted do not wait.

Cost, besides the PodGroups: every run one paginated LIST of pods with `status.phase!=Running,status.phase!=Succeeded`
(one read of the scope where two `=` LISTs would read it twice; `status.phase` is a selectable field, not an index,
k8s.io/kubernetes@v1.37.2 `pkg/registry/core/pod/strategy.go`); only while a judged member failed recently, or a
member is within 60 s of its gang's wait time and the pods read do not show minMember bound (not under
`only-waiting`), one LIST per such namespace of its Running and Succeeded pods (the counters are stale), not
narrowed by label since a member may be named by annotation: an elastic gang whose spares wait costs it every
run. Scope both with `namespace` where the gangs live in one namespace.

The PodGroup API not being served (404) is `error`, never "no gangs"; a future timestamp counts as "just now".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import Field, field_validator

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.errors import ClusterError, ClusterResponseError
from outpost.kube import (
    POD_GROUPS,
    PODS,
    PodGroup,
    access,
    age_seconds,
    collection_path,
    find_condition,
    parse_items,
    parse_label_selector,
)
from outpost.kube.golang import go_duration_seconds, go_int32
from outpost.kube.objects import ContainerTerminated, PodSchedulingOutline
from outpost.result import Finding, NextStep, Result
from outpost.runbook import Runbook

NAME = "gang-scheduling"
FAILS_WHEN = (
    "a gang's (PodGroup's or pod-annotation gang's) members wait unscheduled past its own wait time "
    "(else {stuck_after_seconds} s, koord's default) while fewer than minMember are bound as its match policy "
    "counts them, or a member pod failed in the last {failed_window_seconds} s leaving fewer than minMember "
    "running or succeeded (or a PodGroup's status turned Failed so)"
)
# koord-scheduler's Deployment in koordinator-sh/charts v1.6.0: its log says why a gang's members were refused.
SCHEDULER_LOGS = "kubectl -n koordinator-system logs deployment/koord-scheduler --tail=200"
GANG_STUCK = Runbook(
    "gang-stuck",
    "A gang's members wait to be scheduled past the gang's wait time",
    "the nodes cannot hold at once the members the gang still needs (CPU, memory or batch resources, node "
    "affinity, taints, an ElasticQuota used up: the pod's FailedScheduling events say which; under match-policy "
    "only-waiting a gang's spare members also need minMember of them placed together), or koord-scheduler is not "
    "running or not leading, so pods with schedulerName koord-scheduler are never tried",
    "kubectl -n {namespace} describe pod {pod}",
    SCHEDULER_LOGS,
)
QUORUM_LOST = Runbook(
    "quorum-lost",
    "A gang's members failed and fewer than minMember still run",
    "a member pod failed (its container exited non-zero, was OOM-killed, or its node went away); the gang's "
    "workload must restart it or the whole gang, koord-scheduler does not",
    "kubectl -n {namespace} describe pod {pod}",
    "kubectl -n {namespace} logs {pod} --all-containers --tail=200",
)
MEMBER_FAILED = Runbook(
    "member-failed",
    "A gang member failed while minMember members still run",
    "a member beyond the quorum failed (its container exited non-zero or was OOM-killed): the gang goes on, one "
    "more failure breaks it",
    "kubectl -n {namespace} describe pod {pod}",
    "kubectl -n {namespace} logs {pod} --all-containers --tail=200",
)
PODGROUP_FAILED = Runbook(
    "podgroup-failed",
    "A PodGroup's status was set to Failed",
    "something other than koord-scheduler v1.6.0 (which never writes Failed) wrote the status: another "
    "coscheduling controller or a client; its managedFields name who",
    "kubectl -n {namespace} get podgroup {name} -o yaml --show-managed-fields",
    "kubectl -n {namespace} get pods -l pod-group.scheduling.sigs.k8s.io={name} -o wide",
)
PODGROUP_UNKNOWN = Runbook(
    "podgroup-unknown",
    "A PodGroup's phase is Unknown",
    "something other than koord-scheduler (which never writes Unknown) wrote the status",
    "kubectl -n {namespace} get podgroup {name} -o yaml --show-managed-fields",
    "kubectl -n {namespace} get pods -l pod-group.scheduling.sigs.k8s.io={name} -o wide",
)
GANG_INCOMPLETE = Runbook(
    "gang-incomplete",
    "Fewer members than minMember exist, and koord-scheduler holds them",
    "the workload created fewer pods than the gang's minMember (its parallelism or replicas below it, a quota or "
    "LimitRange refused the rest, or they are held by schedulingGates); its controller is named under "
    "Controlled By",
    "kubectl -n {namespace} describe pod {pod}",
    "kubectl -n {namespace} get events --sort-by=.lastTimestamp",
)
GANG_UNJUDGEABLE = Runbook(
    "gang-unjudgeable",
    "A gang is in a state Outpost cannot judge",
    "a PodGroup phase upstream does not define, pods without creationTimestamp, or a failed or overdue member "
    "whose namespace's running pods were not read (the probe's clock went back)",
    "kubectl -n {namespace} get podgroups,pods -o wide",
    "docs/checks.md#gang-scheduling",
)
MORE_GANGS = Runbook(
    "more-gangs",
    "More gangs than the ones named are in the same state",
    "as for the gangs named before this line: many gangs at once points at koord-scheduler or the cluster's "
    "capacity rather than one workload",
    "kubectl get podgroups {scope} -o wide && kubectl get pods {scope} --field-selector status.phase=Pending -o wide",
    SCHEDULER_LOGS,
)

RUNBOOKS = (
    GANG_STUCK,
    QUORUM_LOST,
    MEMBER_FAILED,
    PODGROUP_FAILED,
    PODGROUP_UNKNOWN,
    GANG_INCOMPLETE,
    GANG_UNJUDGEABLE,
    MORE_GANGS,
)

KNOWN_PHASES = ("Pending", "PreScheduling", "Scheduling", "Scheduled", "Running", "Finished", "Failed", "Unknown")
"""Every phase upstream's PodGroup defines (`PodGroupPhase`)."""
POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
LIGHTWEIGHT_NAME_LABEL = "pod-group.scheduling.sigs.k8s.io/name"
LIGHTWEIGHT_MIN_LABEL = "pod-group.scheduling.sigs.k8s.io/min-available"
GANG_NAME_ANNOTATION = "gang.scheduling.koordinator.sh/name"
GANG_MIN_ANNOTATION = "gang.scheduling.koordinator.sh/min-available"
GANG_WAIT_ANNOTATION = "gang.scheduling.koordinator.sh/waiting-time"
GANG_TOTAL_ANNOTATION = "gang.scheduling.koordinator.sh/total-number"
GANG_MATCH_POLICY_ANNOTATION = "gang.scheduling.koordinator.sh/match-policy"
ALIAS_MATCH_POLICY_ANNOTATION = "pod-group.scheduling.sigs.k8s.io/match-policy"
"""A pod's (never a PodGroup's) second spelling of the match policy (`apis/extension/coscheduling.go`)."""
ONLY_WAITING = "only-waiting"
WAITING_AND_RUNNING = "waiting-and-running"
ONCE_SATISFIED = "once-satisfied"
MATCH_POLICIES = (ONLY_WAITING, WAITING_AND_RUNNING, ONCE_SATISFIED)
"""The match policies koord-scheduler accepts; any other value, or none, is `once-satisfied` (`core/gang.go`)."""
READ_AHEAD_SECONDS = 60
"""fetch counts a namespace's Running members for a gang whose member is within this of its wait time, so that
evaluate, a moment later on its own clock, has them when the member crosses it."""
KOORD_GANG_WAIT_SECONDS = 600
"""CoschedulingArgs.defaultTimeout's default (`pkg/scheduler/apis/config/v1/defaults.go`)."""
HELD_UNTIL_COMPLETE = "gang child pod not collect enough"
"""koord's own PreEnqueue/PreFilter refusal while fewer than minMember members exist (`coscheduling/core/core.go`)."""
TRIED_REASONS = ("Unschedulable", "SchedulerError")
"""kube-scheduler's PodScheduled=False reasons after an attempt (k8s.io/kubernetes@v1.28.7, the version koord-scheduler
v1.6.0 embeds: `pkg/scheduler/schedule_one.go` handleSchedulingFailure)."""
GATED_REASON = "SchedulingGated"
"""What the API server writes on a pod held by its own `spec.schedulingGates` (`PodReasonSchedulingGated`)."""
LISTED = 10
"""Errors and details name at most this many gangs per kind of problem, then say how many more."""
MEMBERS_NAMED = 2
"""A stuck or failed gang's line describes this many of its members, then counts the rest."""
MESSAGE_CHARS = 160
"""A member's scheduling or failure message is cut to this length in a line (the full one is on the pod)."""
UNSETTLED_PHASES = "status.phase!=Running,status.phase!=Succeeded"
"""Pending (waiting members), Failed (failed members) and Unknown pods, in one read of the scope."""
SETTLED_PHASES = "status.phase!=Pending,status.phase!=Failed,status.phase!=Unknown"
"""Running and Succeeded pods: the members that keep a gang's quorum."""


class GangSchedulingParams(Params):
    namespace: str | None = Field(
        None, description="Only PodGroups and pods in this namespace; default: every namespace."
    )
    label_selector: str = Field(
        "",
        description="Only PodGroups matching this label selector (server side). With "
        "one, gangs declared by pod annotation are not judged.",
    )
    stuck_after_seconds: int = Field(
        KOORD_GANG_WAIT_SECONDS,
        ge=1,
        le=7 * 86400,
        description="koord-scheduler's defaultTimeout: how long the members of a gang "
        "that declares no wait time of its own may wait to be scheduled "
        "before it counts as stuck (a gang's own wait time, shorter or "
        "longer, wins, as in koord).",
    )
    failed_window_seconds: int = Field(
        3600,
        ge=60,
        le=7 * 86400,
        description="A member (or a PodGroup) Failed longer ago than this is stale "
        "(failed pods stay until deleted); keep it above the monitor's "
        "grace.",
    )
    scheduler_names: list[str] = Field(
        default_factory=lambda: ["koord-scheduler"],
        description="Judge only waiting and failed pods of these schedulers; empty: every scheduler.",
    )
    fail_incomplete: bool = Field(
        False,
        description="Also fail gangs whose fewer-than-minMember members wait "
        "past their wait time (the workload did not create them all).",
    )

    @field_validator("label_selector")
    @classmethod
    def _selector(cls, value: str) -> str:
        parse_label_selector(value)  # raises ValueError naming the problem
        return value


@dataclass(frozen=True)
class GangSchedulingData:
    path: str
    pod_groups: list[PodGroup]
    pods_path: str = ""
    unsettled_pods: list[PodSchedulingOutline] = field(default_factory=list)
    """Pods neither Running nor Succeeded in scope: the waiting and the failed members."""
    settled_pods: dict[str, list[PodSchedulingOutline]] = field(default_factory=dict)
    """Running and Succeeded pods of each namespace read for a recent failed member (all of them, by namespace)."""


def fetch(cluster: Cluster, params: GangSchedulingParams) -> GangSchedulingData:
    path = collection_path(POD_GROUPS, params.namespace)
    try:
        items = cluster.list(path, label_selector=params.label_selector or None)
    except ClusterResponseError as error:
        if error.status_code == 404:
            raise ClusterError(
                f"podgroups ({POD_GROUPS.api_version}) not served by cluster {cluster.name} "
                f"(HTTP 404 for {path}): is the PodGroup CRD installed? gangs not observed"
            ) from None
        raise
    pod_groups = parse_items(PodGroup, items, f"LIST {path}")
    pods_path = collection_path(PODS, params.namespace)
    unsettled = parse_items(
        PodSchedulingOutline, cluster.list(pods_path, field_selector=UNSETTLED_PHASES), f"LIST {pods_path}"
    )
    # What to read is decided on this clock; evaluate's `now` is later, so it never finds a failure recent that
    # was old here, reads ahead of a wait time by READ_AHEAD_SECONDS, and calls any unread one `error`.
    settled: dict[str, list[PodSchedulingOutline]] = {}
    for namespace in counted_namespaces(pod_groups, unsettled, params, datetime.now(UTC)):
        namespace_path = collection_path(PODS, namespace)
        settled[namespace] = parse_items(
            PodSchedulingOutline, cluster.list(namespace_path, field_selector=SETTLED_PHASES), f"LIST {namespace_path}"
        )
    return GangSchedulingData(
        path=path, pod_groups=pod_groups, pods_path=pods_path, unsettled_pods=unsettled, settled_pods=settled
    )


def declared_access(params: GangSchedulingParams) -> list[access.Access]:
    return [access.list_(POD_GROUPS, params.namespace), access.list_(PODS, params.namespace)]


# -- members --------------------------------------------------------------------------------------------


def gang_name(pod: PodSchedulingOutline) -> str:
    """The gang koord-scheduler puts the pod in (`coscheduling/util/gang_helper.go` GetGangNameByPod)."""
    labels, annotations = pod.metadata.labels, pod.metadata.annotations
    return (
        labels.get(POD_GROUP_LABEL) or labels.get(LIGHTWEIGHT_NAME_LABEL) or annotations.get(GANG_NAME_ANNOTATION) or ""
    )


def declared_min(pod: PodSchedulingOutline) -> int | None:
    """minMember of a gang declared by this pod (`GetGangMinNumFromPod`); None: koord refuses to initialise it."""
    if label := pod.metadata.labels.get(LIGHTWEIGHT_MIN_LABEL):
        return go_int32(label)
    if GANG_MIN_ANNOTATION in pod.metadata.annotations:
        return go_int32(pod.metadata.annotations[GANG_MIN_ANNOTATION])
    return None


@dataclass(frozen=True)
class Member:
    name: str
    waited: float | None
    """Seconds since it started waiting (negative under clock skew); None when the pod carries no time at all."""
    tried: bool
    """koord-scheduler tried to place it and it fits nowhere (not merely held until the gang is complete)."""
    state: str

    def describe(self) -> str:
        return f"pod {self.name} {self.state}"


def _cut(message: str) -> str:
    return message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 3] + "..."


def member(pod: PodSchedulingOutline, now: datetime) -> Member:
    scheduled = find_condition(pod.status.conditions, "PodScheduled")
    if scheduled is not None and scheduled.status == "False":
        since = scheduled.last_transition_time or pod.metadata.creation_timestamp
        waited = age_seconds(since, now)
        held = HELD_UNTIL_COMPLETE in scheduled.message
        tried = scheduled.reason in TRIED_REASONS and not held
        state = f"PodScheduled=False ({scheduled.reason or 'no reason'}) for {_seconds(waited)}" + (
            f": {_cut(scheduled.message)}" if scheduled.message else ""
        )
        return Member(pod.name, waited, tried, state)
    waited = age_seconds(pod.metadata.creation_timestamp, now)
    return Member(pod.name, waited, False, f"not tried yet, created {_seconds(waited)} ago")


def _seconds(value: float | None) -> str:
    return "an unknown time" if value is None else f"{max(0, int(value))} s"


def judged_scheduler(pod: PodSchedulingOutline, params: GangSchedulingParams) -> bool:
    return not params.scheduler_names or (pod.spec.scheduler_name or "default-scheduler") in params.scheduler_names


def _ended(pod: PodSchedulingOutline) -> list[tuple[str, ContainerTerminated]]:
    """(name, how it ended) of each init and app container that terminated, in the order the pod lists them."""
    statuses = [*pod.status.init_container_statuses, *pod.status.container_statuses]
    return [(c.name, c.state.terminated) for c in statuses if c.state.terminated is not None]


def failed_at(pod: PodSchedulingOutline) -> datetime | None:
    """When the pod failed: the newest end of its containers or its Ready=False transition; None if unrecorded."""
    times = [end.finished_at for _, end in _ended(pod) if end.finished_at is not None]
    ready = find_condition(pod.status.conditions, "Ready")
    if ready is not None and ready.status == "False" and ready.last_transition_time is not None:
        times.append(ready.last_transition_time)
    return max(times, default=None)


def _recent(age: float | None, params: GangSchedulingParams) -> bool:
    return age is None or age <= params.failed_window_seconds  # unrecorded counts as recent (fail closed)


def recently_failed_namespaces(
    pods: list[PodSchedulingOutline], listed: set[tuple[str, str]], params: GangSchedulingParams, now: datetime
) -> list[str]:
    """Namespaces holding a judged gang member that failed within the window: there the quorum must be counted."""
    return sorted(
        {
            pod.namespace
            for pod in pods
            if pod.status.phase == "Failed"
            and gang_name(pod)
            and judged_scheduler(pod, params)
            and (not params.label_selector or (pod.namespace, gang_name(pod)) in listed)
            and _recent(age_seconds(failed_at(pod), now), params)
        }
    )


def counted_namespaces(
    pod_groups: list[PodGroup], pods: list[PodSchedulingOutline], params: GangSchedulingParams, now: datetime
) -> list[str]:
    """Namespaces whose Running and Succeeded pods decide a gang: one holds a member that failed within the window,
    or a member that waited (nearly) its gang's wait time while the pods read so far do not show minMember bound."""
    listed = {(group.namespace, group.name) for group in pod_groups}
    gangs = _gangs(GangSchedulingData("", pod_groups, "", pods), params, now)
    overdue = {
        gang.namespace
        for gang in gangs.by_key.values()
        if gang.needs_count
        and any(m.waited is not None and m.waited > gang.wait - READ_AHEAD_SECONDS for m in gang.members)
    }
    return sorted(overdue.union(recently_failed_namespaces(pods, listed, params, now)))


@dataclass(frozen=True)
class FailedMember:
    name: str
    age: float | None
    """Seconds since it failed (negative under clock skew); None when the pod records no time."""
    cause: str

    def describe(self) -> str:
        when = "at an unrecorded time" if self.age is None else f"{_seconds(self.age)} ago"
        return f"pod {self.name} failed {when} ({self.cause})"


def failed_member(pod: PodSchedulingOutline, now: datetime) -> FailedMember:
    cause = pod.status.reason + (f": {_cut(pod.status.message)}" if pod.status.message else "")
    ended = _ended(pod)
    failing = [(name, end) for name, end in ended if end.exit_code != 0] or ended
    if not cause and failing:
        name, end = failing[0]
        cause = (
            f"container {name} exited {end.exit_code}"
            + (f", {end.reason}" if end.reason else "")
            + (f", signal {end.signal}" if end.signal else "")
        )
    return FailedMember(pod.name, age_seconds(failed_at(pod), now), cause or "no reason recorded")


@dataclass
class Gang:
    ref: str
    namespace: str
    min_member: int
    wait: float
    """The gang's wait time in seconds: its own, else koord's default (`stuck_after_seconds`)."""
    note: str = ""
    pod_group: PodGroup | None = None
    policy: str = ONCE_SATISFIED
    total: int = 0
    initialised: bool = True
    """False where koord-scheduler never initialises the gang: it refuses every member (`PreEnqueue`)."""
    members: list[Member] = field(default_factory=list)
    failed: list[FailedMember] = field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    bound: int = 0
    """Members on a node and not finished, as koord-scheduler counts them bound (`BoundChildren`: its pod informer
    holds no Succeeded or Failed pod); Running ones only where their namespace was read."""

    @property
    def minimum(self) -> int:
        return max(self.min_member, 1)

    @property
    def satisfied(self) -> bool:
        """minMember members are bound as the gang's match policy counts them: koord-scheduler places whoever
        still waits one by one, beyond the quorum (`core/core.go` PreEnqueue, PreFilter; `core/gang.go`
        isGangValidForPermit)."""
        # only-waiting: a member passes Permit only while minMember members wait there together, bound or not.
        # The PodGroup's phase is not asked: its counters stay stale after a member fails (see above).
        return self.initialised and self.policy != ONLY_WAITING and self.bound >= self.minimum

    @property
    def wanted(self) -> int:
        """Members the waiting ones must still place together: minMember, less those bound where the policy
        counts them."""
        if not self.initialised or self.policy == ONLY_WAITING:
            return self.minimum
        return max(self.minimum - self.bound, 1)

    @property
    def needs_count(self) -> bool:
        """Whether the gang's Running members decide its quorum (they are read only where needed)."""
        return self.initialised and self.policy != ONLY_WAITING and not self.satisfied

    @property
    def context(self) -> str:
        extra = [f"total-number {self.total}"] if self.total > self.min_member else []
        extra += [f"match-policy {self.policy}"] if self.policy != ONCE_SATISFIED else []
        if self.note:
            return ", ".join([self.note, *extra])
        return "; ".join([_counts(self.pod_group), *extra]) if self.pod_group else ""

    @property
    def name(self) -> str:
        """The gang's (and its PodGroup's) name: the last part of `ref`, as names hold no `/`."""
        return self.ref.rpartition("/")[2]


@dataclass
class Gangs:
    by_key: dict[tuple[str, str], Gang] = field(default_factory=dict)
    pending: int = 0
    failed_pods: int = 0
    waiting: int = 0
    failed_members: int = 0
    other_scheduler: int = 0
    gated: int = 0
    not_attributed: int = 0


def _gangs(data: GangSchedulingData, params: GangSchedulingParams, now: datetime) -> Gangs:
    found = Gangs()
    for group in data.pod_groups:
        found.by_key[(group.namespace, group.name)] = _declared_by_pod_group(group, params)
    bound: list[PodSchedulingOutline] = []
    for pod in sorted(
        data.unsettled_pods,
        key=lambda p: (
            p.namespace,
            p.metadata.creation_timestamp is None,
            p.metadata.creation_timestamp or now,
            p.name,
        ),
    ):
        # The server filtered on phase; judge again rather than trust it.
        phase = pod.status.phase
        found.pending += phase == "Pending"
        found.failed_pods += phase == "Failed"
        name = gang_name(pod)
        if name and pod.node_name and phase not in ("Succeeded", "Failed"):
            bound.append(pod)
        # Bound or leaving pods do not wait; Unknown ones neither wait nor failed.
        waiting = phase == "Pending" and not pod.node_name and not pod.terminating
        if not name or not (waiting or phase == "Failed"):
            continue
        if not judged_scheduler(pod, params):
            found.other_scheduler += 1
            continue
        scheduled = find_condition(pod.status.conditions, "PodScheduled")
        if waiting and scheduled is not None and scheduled.status == "False" and scheduled.reason == GATED_REASON:
            found.gated += 1
            continue
        key = (pod.namespace, name)
        gang = found.by_key.get(key)
        if gang is None:
            if params.label_selector:
                found.not_attributed += 1  # its PodGroup may be one the selector left out
                continue
            gang = found.by_key[key] = _declared_by_pods(pod, name, params)
        if waiting:
            gang.members.append(member(pod, now))
            found.waiting += 1
        else:
            gang.failed.append(failed_member(pod, now))
            found.failed_members += 1
    for pods in data.settled_pods.values():
        for pod in pods:
            if pod.status.phase == "Running" and pod.node_name:
                bound.append(pod)
            gang = found.by_key.get((pod.namespace, gang_name(pod)))
            if gang is None or pod.terminating:  # a member being deleted is leaving the gang
                continue
            gang.running += pod.status.phase == "Running"
            gang.succeeded += pod.status.phase == "Succeeded"
    for pod in bound:  # of every scheduler, being deleted or not: koord counts each until it is gone
        gang = found.by_key.get((pod.namespace, gang_name(pod)))
        if gang is not None:
            gang.bound += 1
    return found


def match_policy(value: str) -> str:
    """The match policy koord-scheduler applies for an annotation's value (`core/gang.go` tryInitBy...)."""
    return value if value in MATCH_POLICIES else ONCE_SATISFIED


def total_number(annotations: dict[str, str], minimum: int) -> int:
    """TotalChildrenNum as `core/gang.go` reads it: minMember when unparsable or (other than 0) below it."""
    total = go_int32(annotations.get(GANG_TOTAL_ANNOTATION, ""))
    return minimum if total is None or (total != 0 and total < minimum) else total


def _declared_by_pod_group(group: PodGroup, params: GangSchedulingParams) -> Gang:
    """A PodGroup's gang as `core/gang.go` tryInitByPodGroup configures it: its spec and its own annotations."""
    timeout = group.spec.schedule_timeout_seconds  # util.GetWaitTimeDuration: its own when set and >= 0
    annotations = group.metadata.annotations
    return Gang(
        group.ref,
        group.namespace,
        group.spec.min_member,
        float(timeout) if timeout is not None and timeout >= 0 else float(params.stuck_after_seconds),
        pod_group=group,
        policy=match_policy(annotations.get(GANG_MATCH_POLICY_ANNOTATION, "")),
        total=total_number(annotations, group.spec.min_member),
    )


def _declared_by_pods(first: PodSchedulingOutline, name: str, params: GangSchedulingParams) -> Gang:
    """A gang without a PodGroup, configured as koord does it: from the first of its pods it sees."""
    ref, namespace, annotations = f"gang {first.namespace}/{name}", first.namespace, first.metadata.annotations
    if first.metadata.labels.get(POD_GROUP_LABEL):
        return Gang(
            ref,
            namespace,
            1,
            params.stuck_after_seconds,
            note=f"pods labelled {POD_GROUP_LABEL}={name} but no such PodGroup: koord-scheduler never "
            "initialises this gang",
            initialised=False,
        )
    # tryInitByPodConfig: a waiting-time Go cannot parse, or not above 0, is the default.
    declared = go_duration_seconds(annotations.get(GANG_WAIT_ANNOTATION, ""))
    wait = declared if declared is not None and declared > 0 else float(params.stuck_after_seconds)
    minimum = declared_min(first)
    if minimum is None:
        return Gang(
            ref,
            namespace,
            1,
            wait,
            note=f"declared by pod annotation without a valid "
            f"{GANG_MIN_ANNOTATION}: koord-scheduler never initialises "
            "this gang",
            initialised=False,
        )
    policy = annotations.get(GANG_MATCH_POLICY_ANNOTATION) or annotations.get(ALIAS_MATCH_POLICY_ANNOTATION, "")
    return Gang(
        ref,
        namespace,
        minimum,
        wait,
        note="declared by pod annotation",
        policy=match_policy(policy),
        total=total_number(annotations, minimum),
    )


# -- judgement ------------------------------------------------------------------------------------------


def _listed(lines: list[str]) -> list[str]:
    if len(lines) <= LISTED:
        return lines
    return [*lines[:LISTED], f"... and {len(lines) - LISTED} more"]


def _listed_findings(findings: list[Finding], more: NextStep) -> list[Finding]:
    """`_listed` for lines with their steps: the line counting the rest carries `more`."""
    if len(findings) <= LISTED:
        return findings
    return [*findings[:LISTED], Finding(f"... and {len(findings) - LISTED} more", more)]


def _lines(findings: list[Finding]) -> list[str]:
    return [finding.line for finding in findings]


def _counts(group: PodGroup) -> str:
    s = group.status
    return (
        f"phase {s.phase or '(unset)'}, {s.scheduled} scheduled, {s.running} running, {s.succeeded} succeeded, "
        f"{s.failed} failed of minMember {group.spec.min_member}"
    )


def _named(described: list[str]) -> str:
    named = "; ".join(described[:MEMBERS_NAMED])
    return named + (f"; +{len(described) - MEMBERS_NAMED} more" if len(described) > MEMBERS_NAMED else "")


def _members_ordered(members: list[Member]) -> list[Member]:
    return sorted(members, key=lambda m: (not m.tried, -(m.waited or 0.0), m.name))


def _members(members: list[Member]) -> str:
    return _named([m.describe() for m in _members_ordered(members)])


def _failures_ordered(failed: list[FailedMember]) -> list[FailedMember]:
    return sorted(failed, key=lambda m: (m.age is not None, m.age or 0.0, m.name))  # newest first


def _failures(failed: list[FailedMember]) -> str:
    return _named([m.describe() for m in _failures_ordered(failed)])


@dataclass
class Verdicts:
    failed: list[Finding] = field(default_factory=list)
    stuck: list[Finding] = field(default_factory=list)
    unjudgeable: list[Finding] = field(default_factory=list)
    degraded: list[Finding] = field(default_factory=list)
    incomplete: list[Finding] = field(default_factory=list)
    beyond_quorum: list[str] = field(default_factory=list)
    stale_failed: list[str] = field(default_factory=list)
    pending_without_members: list[str] = field(default_factory=list)


def _judge_members(gang: Gang, counted: bool, verdicts: Verdicts) -> None:
    if not gang.members:
        return
    if gang.satisfied:
        bound = f"{gang.bound} bound of minMember {gang.minimum}; " if gang.bound >= gang.minimum else ""
        verdicts.beyond_quorum.append(
            f"{gang.ref}: {len(gang.members)} member(s) wait beyond the quorum "
            f"({bound}{gang.context}): {_members(gang.members)}"
        )
        return
    timeless = [m for m in gang.members if m.waited is None]
    if timeless:
        verdicts.unjudgeable.append(
            GANG_UNJUDGEABLE.at(
                f"{gang.ref}: member(s) {', '.join(m.name for m in timeless)} carry no "
                "creationTimestamp or PodScheduled time, wait not observed",
                namespace=gang.namespace,
            )
        )
    overdue = [m for m in gang.members if m.waited is not None and m.waited > gang.wait]
    if not overdue:
        return
    first = {"namespace": gang.namespace, "pod": _members_ordered(overdue)[0].name}  # the first the line names
    if gang.needs_count and not counted:
        verdicts.unjudgeable.append(
            GANG_UNJUDGEABLE.at(
                f"{gang.ref}: {len(overdue)} member(s) waited longer than {int(gang.wait)} s but the running "
                f"members of namespace {gang.namespace} were not read (the probe's clock went back?): "
                f"{_members(overdue)}",
                **first,
            )
        )
        return
    wanted = gang.wanted
    if len(overdue) >= wanted or any(m.tried for m in overdue):
        bound = f", {gang.bound} bound" if gang.bound and gang.policy != ONLY_WAITING else ""
        verdicts.stuck.append(
            GANG_STUCK.at(
                f"{gang.ref}: observed {len(overdue)} member(s) waiting to be scheduled longer than "
                f"{int(gang.wait)} s (want minMember {gang.minimum} scheduled within it{bound}; "
                f"{gang.context}): {_members(overdue)}",
                **first,
            )
        )
    elif len(gang.members) < wanted:
        verdicts.incomplete.append(
            GANG_INCOMPLETE.at(
                f"{gang.ref}: observed {len(gang.members)} member(s) waiting, fewer than the {wanted} minMember "
                f"still needs, held by koord-scheduler until the workload creates the rest ({gang.context}): "
                f"{_members(overdue)}",
                **first,
            )
        )
    # Otherwise the gang is complete and its younger members have not waited their wait time yet.


def _judge_failed_members(gang: Gang, counted: bool, params: GangSchedulingParams, verdicts: Verdicts) -> bool:
    """Judge the gang's failed members; True when one failed within the window (its verdict is made here)."""
    recent = [m for m in gang.failed if _recent(m.age, params)]
    stale = [m for m in gang.failed if not _recent(m.age, params)]
    if stale and not recent:
        verdicts.stale_failed.append(
            f"{gang.ref}: {len(stale)} member(s) failed more than "
            f"{params.failed_window_seconds} s ago: {_failures(stale)}"
        )
    if not recent:
        return False
    if not counted:
        verdicts.unjudgeable.append(
            GANG_UNJUDGEABLE.at(
                f"{gang.ref}: {len(recent)} member(s) failed within "
                f"{params.failed_window_seconds} s but the running members of namespace "
                f"{gang.namespace} were not read (the probe's clock went back?): "
                f"{_failures(recent)}",
                namespace=gang.namespace,
            )
        )
        return True
    quorum = f"{gang.running} running + {gang.succeeded} succeeded of minMember {gang.min_member}"
    context = f"; {gang.context}" if gang.context else ""
    newest = {"namespace": gang.namespace, "pod": _failures_ordered(recent)[0].name}  # the first the line names
    if gang.running + gang.succeeded >= gang.min_member:
        verdicts.degraded.append(
            MEMBER_FAILED.at(
                f"{gang.ref}: observed {len(recent)} failed member(s), {quorum}: minMember still "
                f"met{context}: {_failures(recent)}",
                **newest,
            )
        )
    else:
        verdicts.failed.append(
            QUORUM_LOST.at(
                f"{gang.ref}: observed {len(recent)} failed member(s), {quorum} (want running + "
                f"succeeded >= minMember{context}): {_failures(recent)}",
                **newest,
            )
        )
    return True


def _judge_phase(
    group: PodGroup, members: int, failure_judged: bool, params: GangSchedulingParams, now: datetime, verdicts: Verdicts
) -> None:
    phase = group.status.phase
    s = group.status
    names = {"namespace": group.namespace, "name": group.name}
    if phase == "Failed":
        if failure_judged:
            return  # its members said more, and more recently, than the phase
        written = group.phase_written_at
        age = age_seconds(written, now)
        when = "at an unrecorded time" if age is None else f"{max(0, int(age))} s ago"
        counts = f"{s.failed} failed, {s.running} running, {s.succeeded} succeeded of minMember {group.spec.min_member}"
        if not _recent(age, params):
            verdicts.stale_failed.append(
                f"{group.ref}: phase Failed {when} ({counts}); koord-scheduler never revisits a Failed PodGroup"
            )
        elif s.running + s.succeeded >= group.spec.min_member:
            verdicts.degraded.append(
                PODGROUP_FAILED.at(
                    f"{group.ref}: observed phase Failed {when} ({counts}): minMember still met, a member beyond it "
                    "failed",
                    **names,
                )
            )
        else:
            verdicts.failed.append(
                PODGROUP_FAILED.at(
                    f"{group.ref}: observed phase Failed {when} ({counts}) (want running + succeeded >= minMember)",
                    **names,
                )
            )
    elif phase == "Unknown":
        verdicts.degraded.append(
            PODGROUP_UNKNOWN.at(
                f"{group.ref}: observed phase Unknown ({_counts(group)}), which koord-scheduler never writes", **names
            )
        )
    elif phase and phase not in KNOWN_PHASES:
        verdicts.unjudgeable.append(
            GANG_UNJUDGEABLE.at(
                f"{group.ref}: observed phase {phase!r}, not a PodGroup phase upstream defines "
                f"({', '.join(KNOWN_PHASES)})",
                **names,
            )
        )
    elif phase in ("", "Pending") and members == 0:
        verdicts.pending_without_members.append(group.ref)


def evaluate(data: GangSchedulingData, params: GangSchedulingParams, now: datetime) -> Result:
    gangs = _gangs(data, params, now)
    verdicts = Verdicts()
    by_phase: dict[str, int] = {}
    for _, gang in sorted(gangs.by_key.items(), key=lambda item: item[0]):
        counted = gang.namespace in data.settled_pods
        _judge_members(gang, counted, verdicts)
        failure_judged = _judge_failed_members(gang, counted, params, verdicts)
        if gang.pod_group is not None:
            phase = gang.pod_group.status.phase or "(unset)"
            by_phase[phase] = by_phase.get(phase, 0) + 1
            _judge_phase(gang.pod_group, len(gang.members), failure_judged, params, now, verdicts)
    annotation_gangs = sum(1 for gang in gangs.by_key.values() if gang.pod_group is None)
    failing = verdicts.failed + verdicts.stuck + (verdicts.incomplete if params.fail_incomplete else [])
    details: dict[str, Any] = {
        "path": data.path,
        "pods_path": data.pods_path,
        "pod_groups": len(data.pod_groups),
        "by_phase": dict(sorted(by_phase.items())),
        "gangs_without_pod_group": annotation_gangs,
        "pending_pods": gangs.pending,
        "failed_pods": gangs.failed_pods,
        "members_waiting": gangs.waiting,
        "members_failed": gangs.failed_members,
        "quorum_counted_in": sorted(data.settled_pods),
        "other_scheduler_pods": gangs.other_scheduler,
        "gated_pods": gangs.gated,
        "not_attributed_pods": gangs.not_attributed,
        "failed": len(verdicts.failed),
        "stuck": len(verdicts.stuck),
        "incomplete": _listed(_lines(verdicts.incomplete)),
        "beyond_quorum": _listed(verdicts.beyond_quorum),
        "stale_failed": _listed(verdicts.stale_failed),
        "pending_without_members": _listed(verdicts.pending_without_members),
        "stuck_after_seconds": params.stuck_after_seconds,
        "failed_window_seconds": params.failed_window_seconds,
        "scheduler_names": list(params.scheduler_names),
    }
    scope = f"{len(data.pod_groups)} PodGroup(s) and {annotation_gangs} gang(s) without one"
    more = MORE_GANGS.step(scope=f"-n {params.namespace}" if params.namespace else "-A")

    def listed(findings: list[Finding]) -> list[Finding]:
        return _listed_findings(findings, more)

    if failing:
        parts = [
            f"{len(verdicts.stuck)} gang(s) stuck waiting" if verdicts.stuck else "",
            f"{len(verdicts.failed)} gang(s) failed below minMember" if verdicts.failed else "",
            f"{len(verdicts.incomplete)} incomplete gang(s) waiting"
            if params.fail_incomplete and verdicts.incomplete
            else "",
        ]
        return Result.failed(
            NAME,
            f"{' and '.join(p for p in parts if p)} of {scope}",
            (
                listed(verdicts.stuck)
                + listed(verdicts.failed)
                + (listed(verdicts.incomplete) if params.fail_incomplete else [])
                + listed(verdicts.unjudgeable)
                + listed(verdicts.degraded)
            ),
            details,
        )
    if verdicts.unjudgeable:
        return Result.unobserved(
            NAME,
            f"{len(verdicts.unjudgeable)} gang(s) in a state Outpost cannot judge: {verdicts.unjudgeable[0].line}",
            listed(verdicts.unjudgeable) + listed(verdicts.degraded),
            details,
        )
    notes = [
        f"{len(verdicts.incomplete)} incomplete" if verdicts.incomplete else "",
        f"{len(verdicts.stale_failed)} stale Failed" if verdicts.stale_failed else "",
        f"{len(verdicts.pending_without_members)} Pending without members" if verdicts.pending_without_members else "",
    ]
    noted = ", ".join(n for n in notes if n)
    if verdicts.degraded:
        return Result.degraded(
            NAME,
            f"{len(verdicts.degraded)} of {scope} worth reading: {verdicts.degraded[0].line}",
            listed(verdicts.degraded),
            details,
        )
    summary = (
        f"{scope}: none stuck past {params.stuck_after_seconds} s, none failed below minMember in the last "
        f"{params.failed_window_seconds} s"
    )
    return Result.ok(NAME, summary + (f" ({noted}: see details)" if noted else ""), details)


CHECK = CheckSpec(
    name=NAME,
    system="koordinator",
    layer="batch",
    severity="warning",
    schedule_minutes=5,
    fails_when=FAILS_WHEN,
    params=GangSchedulingParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
