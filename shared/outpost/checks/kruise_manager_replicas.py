"""kruise-manager-replicas: does kruise-controller-manager have enough ready replicas?

It compares the Deployment's `status.readyReplicas` with `min_ready`; an omitted count is 0 (the tutorial's
`jsonpath ... || echo 0` reads it as a script error and pings). Absent or below `min_ready` = failed; below
`spec.replicas` = degraded; all ready = ok; a malformed answer = `error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import Field

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.kube import DEPLOYMENTS, Deployment, access, object_path, observed, parse, ref
from outpost.result import Result
from outpost.runbook import Runbook

NAME = "kruise-manager-replicas"
FAILS_WHEN = "kruise-controller-manager readyReplicas below minimum (absent = 0)"

DESCRIBE_AND_PODS = (
    "kubectl -n {namespace} describe deployment {deployment} && kubectl -n {namespace} get pods -l '{selector}' -o wide"
)
DEPLOYMENT_MISSING = Runbook(
    "deployment-missing",
    "The kruise-manager Deployment does not exist",
    "OpenKruise was uninstalled or never installed here (helm uninstall, a failed first install rolled back), or "
    "it runs under another name or namespace than the check's `deployment`/`namespace`",
    "kubectl -n {namespace} get deployments,pods -o wide",
    "https://openkruise.io/docs/installation",
)
TOO_FEW_READY = Runbook(
    "too-few-ready",
    "Fewer kruise-manager replicas are ready than the minimum",
    "scaled to 0, or its pods are crash-looping, unschedulable or not ready: `webhook-ready` fails until the "
    "manager has written its webhook certificate (Secret kruise-webhook-certs) and serves on 9876",
    DESCRIBE_AND_PODS,
    "kubectl -n {namespace} logs deployment/{deployment} --tail=200",
)
REPLICA_MISSING = Runbook(
    "replica-missing",
    "kruise-manager runs, but not all its desired replicas are ready",
    "a rollout in progress, a replica crash-looping or pending (no node with room, anti-affinity), or a node down",
    DESCRIBE_AND_PODS,
    "kubectl -n {namespace} get events --sort-by=.lastTimestamp",
)

RUNBOOKS = (DEPLOYMENT_MISSING, TOO_FEW_READY, REPLICA_MISSING)


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
        finding = DEPLOYMENT_MISSING.at(line, namespace=params.namespace)
        return Result.failed(NAME, line, [finding], {"found": False})
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
    names = {
        "namespace": params.namespace,
        "deployment": params.deployment,
        "selector": deployment.spec.selector.selector.to_query(),
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
        return Result.failed(NAME, line, [TOO_FEW_READY.at(line, **names)], details)
    if ready < desired:
        line = observed(
            "Deployment", params.deployment, params.namespace, f"{ready}/{desired} ready replicas", f"{desired}"
        )
        return Result.degraded(NAME, line, [REPLICA_MISSING.at(line, **names)], details)
    return Result.ok(NAME, f"{name}: {ready}/{desired} replicas ready", details)


CHECK = CheckSpec(
    name=NAME,
    system="openkruise",
    layer="control plane",
    severity="critical",
    schedule_minutes=1,
    fails_when=FAILS_WHEN,
    params=KruiseManagerReplicasParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
