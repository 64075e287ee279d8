"""leader-leases: is every leader-election Lease held and renewed in time?

A manager whose leader is wedged (alive, answering `/readyz`, but no longer leading) stops reconciling
without any health endpoint saying so; its leader-election Lease says it: `spec.renewTime` stops moving.
Upstream Leases (docs/contracts.md "Upstream facts"): `koordinator-manager`, `koord-scheduler`,
`koord-descheduler` in `koordinator-system`, `kruise-manager` in `kruise-system`; the list is a parameter.

Per Lease:
- absent = failed ("lease NS/NAME: not found"): nobody ever took the leadership, or it is a wrong name;
- no `holderIdentity` = failed: released (a manager that shut down cleanly) and not taken by anyone;
- `renewTime` older than `leaseDurationSeconds + slack_seconds` = failed, naming the last holder: any
  other candidate may take the lock by now, so a lease still this old means nobody leads; no duration or
  no `renewTime` at all is failed the same way (it cannot be fresh);
- `holder_selector` (optional, per Lease: the pods that may hold it, e.g. `control-plane=controller-manager`)
  catches a manager that is gone before its Lease has had time to expire (scaled to 0): no Running pod
  matches = failed ("nobody can renew it"), naming the last holder; the holder's pod (controller-runtime's
  holderIdentity is `<pod name>_<uuid>`) gone while other candidates run = degraded (a failover is due).
  Set by default for the two manager Leases, whose Deployments' labels upstream fixes; not for the
  scheduler and descheduler, whose pods differ by installation.
A renewTime in the future (clock skew) is fresh; its age is kept (negative) in `details`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from outpost.checks.base import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.kube import LEASES, PODS, Lease, Pod, access, collection_path, object_path, parse, parse_list, ref
from outpost.kube.selectors import parse_label_selector
from outpost.result import Result, Status

NAME = "leader-leases"


class LeaderLease(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="Lease name (the leader-election lock).")
    namespace: str = Field(min_length=1, description="Lease namespace.")
    holder_selector: str | None = Field(
        None, description="Label selector of the pods that may hold it (in the Lease's namespace); "
                          "none running = failed even before the Lease expires.")

    @field_validator("holder_selector")
    @classmethod
    def _readable(cls, value: str | None) -> str | None:
        if value is not None and parse_label_selector(value).empty:
            raise ValueError("an empty holder_selector would match every pod; leave it out instead")
        return value


def _upstream_leases() -> list[LeaderLease]:
    return [
        LeaderLease(name="koordinator-manager", namespace="koordinator-system",
                    holder_selector="koord-app=koord-manager"),
        LeaderLease(name="koord-scheduler", namespace="koordinator-system"),
        LeaderLease(name="koord-descheduler", namespace="koordinator-system"),
        LeaderLease(name="kruise-manager", namespace="kruise-system",
                    holder_selector="control-plane=controller-manager"),
    ]


class LeaderLeasesParams(Params):
    leases: list[LeaderLease] = Field(default_factory=_upstream_leases, min_length=1,
                                      description="The leader Leases to watch.")
    slack_seconds: float = Field(10.0, ge=0, le=600,
                                 description="Allowed lateness beyond leaseDurationSeconds (API and clock jitter).")


@dataclass(frozen=True)
class LeaderLeasesData:
    leases: dict[tuple[str, str], Lease | None]
    """(namespace, name) -> the Lease, or None when absent."""
    candidates: dict[tuple[str, str], list[str]]
    """(namespace, holder_selector) -> names of the Running, non-terminating pods it matches."""


def fetch(cluster: Cluster, params: LeaderLeasesParams) -> LeaderLeasesData:
    leases: dict[tuple[str, str], Lease | None] = {}
    candidates: dict[tuple[str, str], list[str]] = {}
    for wanted in params.leases:
        raw = cluster.get_object(object_path(LEASES, wanted.name, wanted.namespace))
        leases[(wanted.namespace, wanted.name)] = (
            None if raw is None else parse(Lease, raw, f"lease {wanted.namespace}/{wanted.name}"))
        key = (wanted.namespace, wanted.holder_selector or "")
        if wanted.holder_selector and key not in candidates:
            path = collection_path(PODS, wanted.namespace)
            pods = parse_list(Pod, {"items": cluster.list(path, label_selector=wanted.holder_selector)},
                              f"LIST {path}")
            candidates[key] = sorted(p.name for p in pods if p.status.phase == "Running" and not p.terminating)
    return LeaderLeasesData(leases, candidates)


def declared_access(params: LeaderLeasesParams) -> list[access.Access]:
    """Each Lease by name; the pods of each namespace with a holder selector (LIST)."""
    needed: list[access.Access] = [access.get(LEASES, w.name, w.namespace) for w in params.leases]
    needed += [access.list_(PODS, w.namespace) for w in params.leases if w.holder_selector]
    return needed


def _holder_pod(holder: str) -> str:
    """The pod name in controller-runtime's / client-go's `<hostname>_<uuid>` identity."""
    return holder.rpartition("_")[0] or holder


def _judge(wanted: LeaderLease, lease: Lease | None, candidates: list[str] | None, now: datetime,
           slack: float) -> tuple[Status, str | None, dict[str, Any]]:
    name = ref("Lease", wanted.name, wanted.namespace)
    if lease is None:
        return Status.FAILED, f"{name}: not found (want a held leader Lease)", {"found": False}
    spec = lease.spec
    age = lease.age_seconds(now)
    holder = spec.holder_identity
    detail: dict[str, Any] = {
        "found": True, "holder": holder, "renew_age_seconds": None if age is None else round(age, 1),
        "lease_duration_seconds": spec.lease_duration_seconds, "lease_transitions": spec.lease_transitions,
    }
    if candidates is not None:
        detail["candidates"] = candidates
    last = f"last holder {holder}" if holder else "no holder"
    if not holder:
        when = "never renewed" if age is None else f"last renewed {age:.0f} s ago"
        return Status.FAILED, f"{name}: not held ({when}; want a holder renewing it)", detail
    if not spec.lease_duration_seconds or age is None:
        missing = "leaseDurationSeconds" if not spec.lease_duration_seconds else "renewTime"
        return Status.FAILED, f"{name}: no {missing} ({last}; want renewals within its duration)", detail
    limit = spec.lease_duration_seconds + slack
    if lease.expired(now, slack):
        return (Status.FAILED,
                f"{name}: observed renewTime {age:.0f} s ago (want within {spec.lease_duration_seconds} s "
                f"+ {slack:g} s slack); {last}", detail)
    if candidates is not None and not candidates:
        return (Status.FAILED,
                f"{name}: no running pod matches {wanted.holder_selector} in {wanted.namespace}, nobody can "
                f"renew it ({last}, renewed {max(age, 0):.0f} s ago, expires within {limit - age:.0f} s)", detail)
    if candidates is not None and _holder_pod(holder) not in candidates:
        return (Status.DEGRADED,
                f"{name}: holder pod {_holder_pod(holder)} no longer runs; {len(candidates)} candidate(s) "
                f"({', '.join(candidates)}) should take over", detail)
    return Status.OK, None, detail


def evaluate(data: LeaderLeasesData, params: LeaderLeasesParams, now: datetime) -> Result:
    details: dict[str, Any] = {"slack_seconds": params.slack_seconds, "leases": {}}
    errors: list[str] = []
    worst = Status.OK
    for wanted in params.leases:
        candidates = (data.candidates.get((wanted.namespace, wanted.holder_selector))
                      if wanted.holder_selector else None)
        if wanted.holder_selector and candidates is None:
            raise KeyError(f"lease {wanted.namespace}/{wanted.name}: candidates for {wanted.holder_selector} "
                           "were not fetched")
        status, line, detail = _judge(wanted, data.leases.get((wanted.namespace, wanted.name)), candidates, now,
                                      params.slack_seconds)
        details["leases"][f"{wanted.namespace}/{wanted.name}"] = {**detail, "status": status.value}
        if line:
            errors.append(line)
        if status is Status.FAILED or (status is Status.DEGRADED and worst is Status.OK):
            worst = status
    total = len(params.leases)
    if worst is Status.OK:
        return Result(check=NAME, status=Status.OK,
                      summary=f"{total}/{total} leader leases held and renewed in time", details=details)
    summary = errors[0] if len(errors) == 1 else f"{len(errors)} of {total} leader leases unhealthy: {errors[0]}"
    return Result(check=NAME, status=worst, summary=summary, errors=errors, details=details)


CHECK = CheckSpec(
    name=NAME,
    system="all",
    layer="control plane",
    severity="critical",
    schedule_minutes=1,
    fails_when="a leader Lease (koordinator-manager, koord-scheduler, kruise-manager) not renewed in time",
    params=LeaderLeasesParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
)
