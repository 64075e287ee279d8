"""leader-leases: is every leader-election Lease held by a running candidate and renewed in time?

A manager whose leader is wedged, or that lost its Lease (alive, `/readyz` ok, not leading), stops reconciling
with no health endpoint saying so; its Lease says it. Defaults are upstream's Leases with the selectors of the
pods that may hold them (docs/contracts.md "Upstream facts"): `kruise-system/kruise-manager`
(`control-plane=controller-manager`, kruise@v1.8.0 `main.go`) and `koordinator-system/koordinator-manager`,
`koord-scheduler`, `koord-descheduler` (`koord-app=...`, koordinator@v1.6.0 `cmd/koord-manager/main.go` and the
scheduler and descheduler configs in `config/manager/` and the v1.6.0 chart).

A holder is `<hostname>_<uuid>` (sigs.k8s.io/controller-runtime@v0.18.6, kruise's, and @v0.16.5, koord-manager's,
`pkg/leaderelection/leader_election.go` NewResourceLock; kube-scheduler's `makeLeaderElectionConfig`, copied in
koordinator@v1.6.0 `cmd/koord-descheduler/app/options/options.go`), the hostname being the pod's name, or the
node's with `hostNetwork` (the charts' `manager.hostNetwork`, `scheduler.hostNetwork`, `descheduler.hostNetwork`,
all false by default; config/ never sets it), which the kubelet names its Node after (k8s.io/component-helpers@v0.37.2
`GetHostname`). So a holder matches a candidate (a Running, non-terminating pod of `holder_selector`) by pod name,
or node name for hostNetwork pods, and the runbook finds its pod in `-o wide`'s NAME or NODE column; with
`--hostname-override` it cannot match: give such a Lease no `holder_selector`.

The duration is bounded because the holder writes it and the others wait that long before taking over (client-go
`leaderelection.go` isLeaseValid): a Lease stolen for 3600 s (the sandbox's fault) makes the real manager exit
and restart not leading for an hour while the Lease looks fresh. Every upstream duration is 15 s (kruise's
`defaultLeaseDuration`, controller-runtime's, component-base@v0.28.7 `RecommendedDefaultLeaderElectionConfiguration`);
`max_lease_duration_seconds` (60 s) leaves room for a longer one and is 60 times shorter than the theft.

Per Lease: absent = failed; no `holderIdentity` = failed (released, not taken); `renewTime` older than
`leaseDurationSeconds + slack_seconds`, or no duration or renewTime = failed naming the last holder; a duration
above `max_lease_duration_seconds` = failed; with a `holder_selector`, no candidate = failed (nobody can renew it,
e.g. scaled to 0, before it expires) and a holder that is no candidate while others run = degraded. A renewTime
in the future is fresh within `max_future_skew_seconds` (10 s, its negative age in `details`), failed beyond it:
a holder that stopped a day ahead would hide for a day.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.kube import LEASES, PODS, Lease, Pod, access, collection_path, object_path, parse, parse_list, ref
from outpost.kube.selectors import parse_label_selector
from outpost.kube.timestamps import future_skew_parameter
from outpost.result import Finding, Result, Status
from outpost.runbook import Runbook

NAME = "leader-leases"

LEASE_MISSING = Runbook(
    "lease-missing",
    "A leader Lease does not exist",
    "the manager never ran leader election (not deployed, or crashing before it starts), or the Lease's name or "
    "namespace in the parameters is not the one the manager uses",
    "kubectl -n {namespace} get leases,pods -o wide",
    "docs/checks.md#leader-leases",
)
LEASE_RELEASED = Runbook(
    "lease-released",
    "A leader Lease is held by nobody",
    "the leader shut down cleanly and no other candidate is running to take over",
    "kubectl -n {namespace} get lease {name} -o yaml",
    "kubectl -n {namespace} get pods -o wide",
)
LEASE_STALE = Runbook(
    "lease-stale",
    "A leader Lease is not renewed in time",
    "the leader is wedged or its pod is gone and no candidate took over; a renewTime ahead of now is a holder "
    "with a skewed clock",
    "kubectl -n {namespace} get lease {name} -o wide && kubectl -n {namespace} get pods -l '{selector}' -o wide",
    "kubectl -n {namespace} logs {holder_pod} --tail=200",
)
LEASE_TOO_LONG = Runbook(
    "lease-too-long",
    "A leader Lease announces a duration nobody would wait out",
    "a client other than the manager took the Lease with a long leaseDurationSeconds: the real candidates wait "
    "that long before taking over; deleting the Lease lets them re-elect within seconds",
    "kubectl -n {namespace} get lease {name} -o yaml",
    "k8s.io/client-go tools/leaderelection (isLeaseValid)",
)
NO_CANDIDATE = Runbook(
    "no-candidate",
    "No running pod can hold a leader Lease",
    "the manager is scaled to 0, its pods are crashing or unschedulable, or its labels no longer match holder_selector",
    "kubectl -n {namespace} get lease {name} -o wide && kubectl -n {namespace} get pods -l {selector} -o wide",
    "kubectl -n {namespace} get events --sort-by=.lastTimestamp",
)
HOLDER_NOT_CANDIDATE = Runbook(
    "holder-not-candidate",
    "A leader Lease is held by something that is not a running candidate",
    "the holder's pod was deleted a moment ago (a failover is due), a foreign client holds the Lease, or a "
    "hostNetwork holder's node is not named after its hostname (`--hostname-override`)",
    "kubectl -n {namespace} get lease {name} -o yaml && kubectl -n {namespace} get pods -l {selector} -o wide",
    "kubectl -n {namespace} get events --sort-by=.lastTimestamp",
)

RUNBOOKS = (LEASE_MISSING, LEASE_RELEASED, LEASE_STALE, LEASE_TOO_LONG, NO_CANDIDATE, HOLDER_NOT_CANDIDATE)


class LeaderLease(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="Lease name (the leader-election lock).")
    namespace: str = Field(min_length=1, description="Lease namespace.")
    holder_selector: str | None = Field(
        None,
        description="Label selector of the pods that may hold it (in the Lease's namespace); "
        "none running = failed even before the Lease expires.",
    )

    @field_validator("holder_selector")
    @classmethod
    def _readable(cls, value: str | None) -> str | None:
        if value is not None and parse_label_selector(value).empty:
            raise ValueError("an empty holder_selector would match every pod; leave it out instead")
        return value


def _upstream_leases() -> list[LeaderLease]:
    return [
        LeaderLease(
            name="koordinator-manager", namespace="koordinator-system", holder_selector="koord-app=koord-manager"
        ),
        LeaderLease(
            name="koord-scheduler", namespace="koordinator-system", holder_selector="koord-app=koord-scheduler"
        ),
        LeaderLease(
            name="koord-descheduler", namespace="koordinator-system", holder_selector="koord-app=koord-descheduler"
        ),
        LeaderLease(
            name="kruise-manager", namespace="kruise-system", holder_selector="control-plane=controller-manager"
        ),
    ]


# Named from the defaults: the catalogue and the monitors cannot list other Leases than the check watches.
FAILS_WHEN = (
    f"a leader Lease (by default {', '.join(lease.name for lease in _upstream_leases())}) stale, "
    "over-long or without a running candidate"
)


class LeaderLeasesParams(Params):
    leases: list[LeaderLease] = Field(
        default_factory=_upstream_leases, min_length=1, description="The leader Leases to watch."
    )
    slack_seconds: float = Field(
        10.0, ge=0, le=600, description="Allowed lateness beyond leaseDurationSeconds (API and clock jitter)."
    )
    max_lease_duration_seconds: float = Field(
        60.0,
        gt=0,
        le=86400,
        description="A Lease whose own leaseDurationSeconds exceeds this is failed (upstream's are 15 s).",
    )
    max_future_skew_seconds: float = future_skew_parameter("renewTime")


@dataclass(frozen=True)
class Candidate:
    """A Running, non-terminating pod that may hold a Lease: what its holder identity can name."""

    pod: str
    node: str
    host_network: bool

    def answers_to(self, hostname: str) -> bool:
        """Whether `hostname` (the part of `<hostname>_<uuid>` before the uuid) is this pod's."""
        if hostname == self.pod:
            return True
        return self.host_network and bool(self.node) and hostname.lower() == self.node


@dataclass(frozen=True)
class LeaderLeasesData:
    leases: dict[tuple[str, str], Lease | None]
    """(namespace, name) -> the Lease, or None when absent."""
    candidates: dict[tuple[str, str], list[Candidate]]
    """(namespace, holder_selector) -> the Running, non-terminating pods it matches, by name."""


def fetch(cluster: Cluster, params: LeaderLeasesParams) -> LeaderLeasesData:
    leases: dict[tuple[str, str], Lease | None] = {}
    candidates: dict[tuple[str, str], list[Candidate]] = {}
    for wanted in params.leases:
        raw = cluster.get_object(object_path(LEASES, wanted.name, wanted.namespace))
        leases[(wanted.namespace, wanted.name)] = (
            None if raw is None else parse(Lease, raw, f"lease {wanted.namespace}/{wanted.name}")
        )
        key = (wanted.namespace, wanted.holder_selector or "")
        if wanted.holder_selector and key not in candidates:
            path = collection_path(PODS, wanted.namespace)
            pods = parse_list(Pod, {"items": cluster.list(path, label_selector=wanted.holder_selector)}, f"LIST {path}")
            candidates[key] = sorted(
                (
                    Candidate(p.name, p.node_name, p.spec.host_network)
                    for p in pods
                    if p.status.phase == "Running" and not p.terminating
                ),
                key=lambda c: c.pod,
            )
    return LeaderLeasesData(leases, candidates)


def declared_access(params: LeaderLeasesParams) -> list[access.Access]:
    """Each Lease by name; the pods of each namespace with a holder selector (LIST, once per namespace)."""
    needed: list[access.Access] = [access.get(LEASES, w.name, w.namespace) for w in params.leases]
    namespaces = dict.fromkeys(w.namespace for w in params.leases if w.holder_selector)
    needed += [access.list_(PODS, namespace) for namespace in namespaces]
    return needed


def _holder_host(holder: str) -> str:
    """The hostname in client-go's `<hostname>_<uuid>` identity (hostnames have no `_`)."""
    return holder.rpartition("_")[0] or holder


def _judge(
    wanted: LeaderLease,
    lease: Lease | None,
    candidates: list[Candidate] | None,
    now: datetime,
    params: LeaderLeasesParams,
) -> tuple[Status, Finding | None, dict[str, Any]]:
    name = ref("Lease", wanted.name, wanted.namespace)
    names = {"namespace": wanted.namespace, "name": wanted.name, "selector": wanted.holder_selector or ""}
    if lease is None:
        return (
            Status.FAILED,
            LEASE_MISSING.at(f"{name}: not found (want a held leader Lease)", **names),
            {"found": False},
        )
    spec = lease.spec
    age = lease.age_seconds(now)
    holder = spec.holder_identity
    detail: dict[str, Any] = {
        "found": True,
        "holder": holder,
        "renew_age_seconds": None if age is None else round(age, 1),
        "lease_duration_seconds": spec.lease_duration_seconds,
        "lease_transitions": spec.lease_transitions,
    }
    host = _holder_host(holder) if holder else ""
    names["holder"] = host or "<holder>"
    holder_pod = None
    if candidates is not None:
        detail["candidates"] = [c.pod for c in candidates]
        holder_pod = next((c.pod for c in candidates if host and c.answers_to(host)), None)
        detail["holder_pod"] = holder_pod
    # The holder's pod when a candidate answers to it; else the pods the runbook lists show it (NAME, or NODE under
    # hostNetwork, is the holder's hostname) names it.
    names["holder_pod"] = holder_pod or "<holder_pod>"
    last = f"last holder {holder}" if holder else "no holder"
    if not holder:
        when = "never renewed" if age is None else f"last renewed {age:.0f} s ago"
        return (
            Status.FAILED,
            LEASE_RELEASED.at(f"{name}: not held ({when}; want a holder renewing it)", **names),
            detail,
        )
    duration = spec.lease_duration_seconds
    if not duration or age is None:
        missing = "leaseDurationSeconds" if not duration else "renewTime"
        line = f"{name}: no {missing} ({last}; want renewals within its duration)"
        return Status.FAILED, LEASE_STALE.at(line, **names), detail
    slack = params.slack_seconds
    skew = params.max_future_skew_seconds
    if age < -skew:
        return (
            Status.FAILED,
            LEASE_STALE.at(
                f"{name}: observed renewTime {-age:.1f} s in the future (want at most {skew:g} s ahead of this "
                f"probe's clock: a holder that stopped would hide until then); {last}",
                **names,
            ),
            detail,
        )
    if lease.expired(now, slack, skew):
        return (
            Status.FAILED,
            # One decimal: a Lease just past its bound (25.2 s) must not read as within it ("25 s").
            LEASE_STALE.at(
                f"{name}: observed renewTime {age:.1f} s ago (want within {duration} s + {slack:g} s slack); {last}",
                **names,
            ),
            detail,
        )
    bound = params.max_lease_duration_seconds
    if duration > bound:
        return (
            Status.FAILED,
            LEASE_TOO_LONG.at(
                f"{name}: observed leaseDurationSeconds {duration} held by {holder} (want <= {bound:g} s: nobody "
                f"would take over for {duration} s after its last renewal, {max(age, 0):.0f} s ago)",
                **names,
            ),
            detail,
        )
    if candidates is not None and not candidates:
        return (
            Status.FAILED,
            NO_CANDIDATE.at(
                f"{name}: no running pod matches {wanted.holder_selector} in {wanted.namespace}, nobody can "
                f"renew it ({last}, renewed {max(age, 0):.0f} s ago, expires within {duration + slack - age:.0f} s)",
                **names,
            ),
            detail,
        )
    if candidates is not None and holder_pod is None:
        return (
            Status.DEGRADED,
            HOLDER_NOT_CANDIDATE.at(
                f"{name}: holder {holder} is not a running candidate (no pod named {host}, nor a hostNetwork pod "
                f"on node {host}); {len(candidates)} candidate(s) ({', '.join(detail['candidates'])}) should take "
                "over",
                **names,
            ),
            detail,
        )
    return Status.OK, None, detail


def evaluate(data: LeaderLeasesData, params: LeaderLeasesParams, now: datetime) -> Result:
    details: dict[str, Any] = {
        "slack_seconds": params.slack_seconds,
        "max_lease_duration_seconds": params.max_lease_duration_seconds,
        "leases": {},
    }
    errors: list[Finding] = []
    worst = Status.OK
    for wanted in params.leases:
        candidates = data.candidates.get((wanted.namespace, wanted.holder_selector)) if wanted.holder_selector else None
        if wanted.holder_selector and candidates is None:
            raise KeyError(
                f"lease {wanted.namespace}/{wanted.name}: candidates for {wanted.holder_selector} were not fetched"
            )
        status, line, detail = _judge(wanted, data.leases.get((wanted.namespace, wanted.name)), candidates, now, params)
        details["leases"][f"{wanted.namespace}/{wanted.name}"] = {**detail, "status": status.value}
        if line:
            errors.append(line)
        if status is Status.FAILED or (status is Status.DEGRADED and worst is Status.OK):
            worst = status
    total = len(params.leases)
    if worst is Status.OK:
        return Result.ok(NAME, f"{total}/{total} leader leases held and renewed in time", details)
    first = errors[0].line
    summary = first if len(errors) == 1 else f"{len(errors)} of {total} leader leases unhealthy: {first}"
    if worst is Status.FAILED:
        return Result.failed(NAME, summary, errors, details)
    return Result.degraded(NAME, summary, errors, details)


CHECK = CheckSpec(
    name=NAME,
    system="all",
    layer="control plane",
    severity="critical",
    schedule_minutes=1,
    fails_when=FAILS_WHEN,
    params=LeaderLeasesParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
