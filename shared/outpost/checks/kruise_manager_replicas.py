"""kruise-manager-replicas: does kruise-controller-manager have enough ready replicas?

It compares the Deployment's `status.readyReplicas` with `min_ready`; an omitted count is 0 (the tutorial's
`jsonpath ... || echo 0` reads it as a script error and pings). Absent or below `min_ready` = failed; below
`spec.replicas` = degraded; all ready = ok; a malformed answer = `error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import Field

from outpost.checks.base import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.kube import DEPLOYMENTS, Deployment, access, object_path, observed, parse, ref
from outpost.result import Result

NAME = "kruise-manager-replicas"


class KruiseManagerReplicasParams(Params):
    namespace: str = Field("kruise-system", description="Namespace of the manager Deployment.")
    deployment: str = Field("kruise-controller-manager", description="The manager Deployment.")
    min_ready: int = Field(1, ge=1, description="Fewest ready replicas that still count as running.")


@dataclass(frozen=True)
class KruiseManagerReplicasData:
    deployment: Deployment | None


def fetch(cluster: Cluster, params: KruiseManagerReplicasParams) -> KruiseManagerReplicasData:
    raw = cluster.get_object(object_path(DEPLOYMENTS, params.deployment, params.namespace))
    if raw is None:
        return KruiseManagerReplicasData(None)
    return KruiseManagerReplicasData(parse(Deployment, raw, f"deployment {params.namespace}/{params.deployment}"))


def declared_access(params: KruiseManagerReplicasParams) -> list[access.Access]:
    return [access.get(DEPLOYMENTS, params.deployment, params.namespace)]


def evaluate(data: KruiseManagerReplicasData, params: KruiseManagerReplicasParams, now: datetime) -> Result:
    name = ref("Deployment", params.deployment, params.namespace)
    deployment = data.deployment
    if deployment is None:
        line = f"{name}: not found (want the manager Deployment with >= {params.min_ready} ready replicas)"
        return Result.failed(NAME, line, [line], {"found": False})
    ready, desired = deployment.status.ready_replicas, deployment.spec.replicas
    details = {
        "found": True,
        "ready_replicas": ready,
        "desired_replicas": desired,
        "available_replicas": deployment.status.available_replicas,
        "updated_replicas": deployment.status.updated_replicas,
        "min_ready": params.min_ready,
        "observed_current": deployment.observed_current,
    }
    if ready < params.min_ready:
        scaled = f", spec.replicas {desired}" if desired < params.min_ready else ""
        line = observed(
            "Deployment",
            params.deployment,
            params.namespace,
            f"{ready} ready replicas{scaled}",
            f">= {params.min_ready}",
        )
        return Result.failed(NAME, line, [line], details)
    if ready < desired:
        line = observed(
            "Deployment", params.deployment, params.namespace, f"{ready}/{desired} ready replicas", f"{desired}"
        )
        return Result.degraded(NAME, line, [line], details)
    return Result.ok(NAME, f"{name}: {ready}/{desired} replicas ready", details)


CHECK = CheckSpec(
    name=NAME,
    system="openkruise",
    layer="control plane",
    severity="critical",
    schedule_minutes=1,
    fails_when="kruise-controller-manager readyReplicas below minimum (absent = 0)",
    params=KruiseManagerReplicasParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
)
