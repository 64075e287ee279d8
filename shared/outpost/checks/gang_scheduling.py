"""gang-scheduling: do Koordinator's gangs (PodGroups) schedule, or have they failed or got stuck?

Reads every PodGroup (`scheduling.sigs.k8s.io/v1alpha1`, docs/contracts.md "Upstream facts": Koordinator)
and judges its `status.phase`:
- `Failed` (the `failed_phases` parameter) is a failure;
- `Pending`, `PreScheduling`, `Scheduling` (the `waiting_phases` parameter) longer than
  `stuck_after_seconds` is a failure too: upstream sets `Failed` only after member pods fail, and a gang
  that never schedules stays waiting forever, which the tutorial's "Failed only" script never sees. The
  wait is counted from `status.scheduleStartTime`, or the PodGroup's creation when it has none; a PodGroup
  without a phase yet counts as `Pending` (the API omits an empty status);
- upstream's `Unknown` is `degraded` (named; the controller could not tell), and a phase upstream does not
  define is `error` (we cannot judge what we do not know), unless a real failure is also observed;
- `Scheduled`, `Running`, `Finished` are healthy.
The PodGroup API not being served (no CRD: HTTP 404) is `error`, never "no gangs, all fine".
A timestamp in the future (clock skew) counts as "just started", never as "stuck".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field, field_validator

from outpost.checks.base import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.errors import ClusterError, ClusterResponseError
from outpost.kube import POD_GROUPS, PodGroup, access, age_seconds, collection_path, parse_items, parse_label_selector
from outpost.result import Result, Status

NAME = "gang-scheduling"
KNOWN_PHASES = ("Pending", "PreScheduling", "Scheduling", "Scheduled", "Running", "Finished", "Failed", "Unknown")
"""Every phase upstream's PodGroup defines (scheduler-plugins `PodGroupPhase`)."""
LISTED = 10
"""Errors name at most this many PodGroups per kind of problem, then say how many more."""


class GangSchedulingParams(Params):
    namespace: str | None = Field(None, description="Only PodGroups in this namespace; default: every namespace.")
    label_selector: str = Field("", description="Only PodGroups matching this label selector (server side).")
    failed_phases: list[str] = Field(default_factory=lambda: ["Failed"], min_length=1,
                                     description="Phases that fail the check at once.")
    waiting_phases: list[str] = Field(default_factory=lambda: ["Pending", "PreScheduling", "Scheduling"],
                                      description="Phases that fail the check when held past stuck_after_seconds.")
    stuck_after_seconds: int = Field(600, ge=1, le=7 * 86400,
                                     description="How long a gang may wait to schedule before it counts as stuck.")

    @field_validator("label_selector")
    @classmethod
    def _selector(cls, value: str) -> str:
        parse_label_selector(value)  # raises ValueError naming the problem
        return value


@dataclass(frozen=True)
class GangSchedulingData:
    path: str
    pod_groups: list[PodGroup]


def fetch(cluster: Cluster, params: GangSchedulingParams) -> GangSchedulingData:
    path = collection_path(POD_GROUPS, params.namespace)
    try:
        items = cluster.list(path, label_selector=params.label_selector or None)
    except ClusterResponseError as error:
        if error.status_code == 404:
            raise ClusterError(f"podgroups ({POD_GROUPS.api_version}) not served by cluster {cluster.name} "
                               f"(HTTP 404 for {path}): is the PodGroup CRD installed? gangs not observed") from None
        raise
    return GangSchedulingData(path=path, pod_groups=parse_items(PodGroup, items, f"LIST {path}"))


def declared_access(params: GangSchedulingParams) -> list[access.Access]:
    return [access.list_(POD_GROUPS, params.namespace)]


def _waiting_since(group: PodGroup) -> datetime | None:
    return group.status.schedule_start_time or group.metadata.creation_timestamp


def _listed(lines: list[str]) -> list[str]:
    if len(lines) <= LISTED:
        return lines
    return [*lines[:LISTED], f"... and {len(lines) - LISTED} more"]


def evaluate(data: GangSchedulingData, params: GangSchedulingParams, now: datetime) -> Result:
    by_phase: dict[str, int] = {}
    failed: list[str] = []
    stuck: list[str] = []
    unknown: list[str] = []
    unrecognised: list[str] = []
    for group in sorted(data.pod_groups, key=lambda g: (g.namespace, g.name)):
        phase = group.status.phase or "Pending"
        by_phase[phase] = by_phase.get(phase, 0) + 1
        members = (f"{group.status.scheduled} scheduled, {group.status.running} running, "
                   f"{group.status.failed} failed of minMember {group.spec.min_member}")
        if phase in params.failed_phases:
            failed.append(f"{group.ref}: observed phase {phase} ({members}) (want Scheduled/Running/Finished)")
        elif phase in params.waiting_phases:
            since = _waiting_since(group)
            age = age_seconds(since, now)
            if age is None:
                # No start and no creation time: we cannot tell how long it waits.
                unrecognised.append(f"{group.ref}: phase {phase} with no scheduleStartTime or creationTimestamp, "
                                    "wait not observed")
            elif age > params.stuck_after_seconds:
                stuck.append(f"{group.ref}: observed phase {phase} for {int(age)} s ({members}) "
                             f"(want scheduled within {params.stuck_after_seconds} s)")
        elif phase == "Unknown":
            unknown.append(f"{group.ref}: observed phase Unknown ({members})")
        elif phase not in KNOWN_PHASES:
            unrecognised.append(f"{group.ref}: observed phase {phase!r}, not a PodGroup phase upstream defines "
                                f"({', '.join(KNOWN_PHASES)})")
    details: dict[str, Any] = {
        "path": data.path,
        "pod_groups": len(data.pod_groups),
        "by_phase": dict(sorted(by_phase.items())),
        "failed": len(failed),
        "stuck": len(stuck),
        "stuck_after_seconds": params.stuck_after_seconds,
    }
    if failed or stuck:
        parts = [f"{len(failed)} Failed" if failed else "", f"{len(stuck)} stuck waiting" if stuck else ""]
        return Result(check=NAME, status=Status.FAILED,
                      summary=f"{' and '.join(p for p in parts if p)} of {len(data.pod_groups)} PodGroup(s)",
                      errors=_listed(failed) + _listed(stuck) + _listed(unrecognised) + _listed(unknown),
                      details=details)
    if unrecognised:
        return Result(check=NAME, status=Status.ERROR,
                      summary=f"{len(unrecognised)} PodGroup(s) in a state Outpost cannot judge: {unrecognised[0]}",
                      errors=_listed(unrecognised) + _listed(unknown), details=details)
    if unknown:
        return Result(check=NAME, status=Status.DEGRADED,
                      summary=f"{len(unknown)} of {len(data.pod_groups)} PodGroup(s) in phase Unknown",
                      errors=_listed(unknown), details=details)
    return Result(check=NAME, status=Status.OK,
                  summary=f"{len(data.pod_groups)} PodGroup(s), none Failed or waiting past "
                          f"{params.stuck_after_seconds} s", details=details)


CHECK = CheckSpec(
    name=NAME,
    system="koordinator",
    layer="batch",
    severity="warning",
    schedule_minutes=5,
    fails_when="a PodGroup Failed, or Pending/Scheduling longer than allowed",
    params=GangSchedulingParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
)
