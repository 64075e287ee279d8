"""What koord-manager-health and kruise-manager-health share: every pod of a manager Deployment, its
health endpoints asked through the API server's pod proxy, one verdict.

Through the pod proxy, because upstream exposes the health port on no Service, and a Service would hide the sick
replica. The pods are those of the Deployment's own `spec.selector`, less terminating and finished ones (listed
in `details`). Every path of every pod is probed (`outpost.cluster.probes`) and judged by status, and by body
with `expect_body` (controller-runtime answers exactly `ok`). All healthy = ok, some = degraded naming each
failing endpoint, none, no pod or no Deployment = failed; a pod that hangs is unhealthy (the API server answered
a control request); 401/403/429/3xx, a silent API server or a malformed object are `error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Literal

from pydantic import Field

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster, ProbeOutcome, ProbeTarget, pod_proxy, probe_all
from outpost.errors import MalformedResponse
from outpost.kube import (
    DEPLOYMENTS,
    PODS,
    Deployment,
    Pod,
    access,
    collection_path,
    object_path,
    parse,
    parse_list,
    ref,
)
from outpost.result import Finding, Result
from outpost.runbook import Runbook

_FINISHED = ("Succeeded", "Failed")

# The failure classes of both manager checks, over the names the line gives: the Deployment and, per pod, the
# pod and the health port it was asked on. Both charts set the Deployment's replicas from `manager.replicas`
# (default 2; openkruise/charts@38153b0939bc8a240a5c841761095159a0f29ed3 versions/kruise/1.8.0/values.yaml and
# templates/manager.yaml, koordinator-sh/charts@a1963c5d2091853f71012c6790f9d1b1364b7734 versions/v1.6.0/values.yaml
# and templates/koord-manager.yaml); neither has a `replicaCount`. On Helm, kruise-system is labelled
# `control-plane: openkruise` and koordinator-system `controle-plane: koordinator` (sic), so kruise's pod webhooks
# (`mpod`, `vpod`: Fail, namespaceSelector `control-plane NotIn [openkruise]`, templates/webhookconfiguration.yaml)
# select koordinator-system; config/ labels both namespaces `control-plane` and kruise's selector is DoesNotExist.
DEPLOYMENT_MISSING = Runbook(
    "deployment-missing",
    "The manager Deployment does not exist",
    "the manager was uninstalled or never installed in this namespace (helm uninstall, a failed upgrade that rolled "
    "back a fresh install), or it runs under another name or namespace than the check's `deployment`/`namespace`",
    "kubectl -n {namespace} get deployments,pods -o wide",
    "kubectl -n {namespace} get events --sort-by=.lastTimestamp",
)
NO_PODS = Runbook(
    "no-pods",
    "The manager Deployment has no running pod to ask",
    "scaled to 0 (`kubectl scale`, an autoscaler, the chart value `manager.replicas: 0`), or its ReplicaSet cannot "
    "create pods (a ResourceQuota, Pod Security admission, no node it tolerates, or a webhook refusing them: on a "
    "Helm install OpenKruise's `Fail` pod webhooks also gate koordinator-system, so a down kruise-manager blocks "
    "koord-manager's pods)",
    "kubectl -n {namespace} describe deployment {deployment}",
    "kubectl -n {namespace} get events --sort-by=.lastTimestamp",
)
POD_NOT_READY = Runbook(
    "pod-not-ready",
    "A manager pod does not answer its health endpoint with 200 ok",
    "its readiness check `webhook-ready` fails: the webhook server has not yet loaded its certificate (the "
    "webhook-certs Secret missing or being rotated) or is not listening; or the pod is crash-looping, starting, or "
    "hangs past timeout_seconds; a pod answering 404 on every path runs without the readyz check (koord-manager "
    "with the feature gate WebhookFramework off)",
    "kubectl -n {namespace} describe pod {pod}",
    "kubectl -n {namespace} logs {pod} --tail=200",
)
RUNBOOKS = (DEPLOYMENT_MISSING, NO_PODS, POD_NOT_READY)
"""Every way a manager check fails or degrades; `make_check` lists them in each system's CheckSpec."""

FAILS_WHEN = "manager readyz not 200 (pod proxy :{port}{paths[0]} by default)"
"""What fails either system's manager check: one body, so one sentence (placeholders from each one's defaults)."""


class ManagerPodsParams(Params):
    """Where the manager runs and how its health endpoints are asked; every check sets its upstream defaults."""

    namespace: str = Field(description="Namespace of the manager Deployment.")
    deployment: str = Field(description="The manager Deployment; its spec.selector finds the pods.")
    port: int = Field(8000, ge=1, le=65535, description="Health port of each pod (controller-runtime: 8000).")
    scheme: Literal["http", "https"] = Field("http", description="https if the health port serves TLS.")
    paths: list[str] = Field(min_length=1, description="Health paths asked on every pod, each must answer 2xx.")
    expect_body: str | None = Field(
        "ok", description="Body each answer must carry (whitespace stripped); null judges by status code only."
    )
    timeout_seconds: float = Field(
        2.0, gt=0, le=30, description="Per request: a pod slower than this (or hanging) is unhealthy."
    )
    concurrency: int = Field(4, ge=1, le=32, description="Requests in flight at once.")


@dataclass(frozen=True)
class ManagerPodsData:
    deployment: Deployment | None
    pods: list[Pod]
    left_out: list[str]
    """Pods matching the selector but not probed: `name (terminating)`, `name (phase Failed)`."""
    outcomes: list[ProbeOutcome]


def fetch(cluster: Cluster, params: ManagerPodsParams) -> ManagerPodsData:
    where = f"deployment {params.namespace}/{params.deployment}"
    raw = cluster.get_object(object_path(DEPLOYMENTS, params.deployment, params.namespace))
    if raw is None:
        return ManagerPodsData(None, [], [], [])
    deployment = parse(Deployment, raw, where)
    selector = deployment.spec.selector.selector
    if selector.empty:
        # apps/v1 requires a selector; an empty one would select every pod of the namespace.
        raise MalformedResponse(f"{where}: spec.selector is empty, cannot tell its pods")
    pods_path = collection_path(PODS, params.namespace)
    all_pods = parse_list(
        Pod, {"items": cluster.list(pods_path, label_selector=selector.to_query())}, f"LIST {pods_path}"
    )
    left_out = {
        p.name: "terminating" if p.terminating else f"phase {p.status.phase}"
        for p in all_pods
        if p.terminating or p.status.phase in _FINISHED
    }
    pods = [p for p in all_pods if p.name not in left_out]
    targets = [
        ProbeTarget(
            p.ref,
            f":{params.port}/{path.lstrip('/')}",
            pod_proxy(params.namespace, p.name, params.port, path, scheme=params.scheme),
            params.expect_body,
        )
        for p in pods
        for path in params.paths
    ]
    outcomes = probe_all(cluster, targets, timeout=params.timeout_seconds, concurrency=params.concurrency)
    return ManagerPodsData(deployment, pods, [f"{name} ({why})" for name, why in sorted(left_out.items())], outcomes)


def declared_access(params: ManagerPodsParams) -> list[access.Access]:
    """The Deployment by name, its pods (LIST by its selector) and their health port through the pod proxy."""
    return [
        access.get(DEPLOYMENTS, params.deployment, params.namespace),
        access.list_(PODS, params.namespace),
        access.pod_proxy(params.namespace),
    ]


def evaluate(check: str, data: ManagerPodsData, params: ManagerPodsParams, now: datetime) -> Result:
    name = ref("Deployment", params.deployment, params.namespace)
    if data.deployment is None:
        line = f"{name}: not found (want the manager Deployment)"
        finding = DEPLOYMENT_MISSING.at(line, namespace=params.namespace, deployment=params.deployment)
        return Result.failed(check, line, [finding], {"deployment": name, "found": False})
    desired = data.deployment.spec.replicas
    details: dict[str, Any] = {
        "deployment": name,
        "desired_replicas": desired,
        "ready_replicas": data.deployment.status.ready_replicas,
        "paths": list(params.paths),
        "expect_body": params.expect_body,
        "left_out": data.left_out,
        "pods": {},
    }
    if not data.pods:
        why = " (scaled to 0)" if desired == 0 else ""
        line = f"{name}: observed 0 pods{why} (want at least 1 answering {', '.join(params.paths)})"
        finding = NO_PODS.at(line, namespace=params.namespace, deployment=params.deployment)
        return Result.failed(check, line, [finding], details)
    by_pod: dict[str, list[ProbeOutcome]] = {p.ref: [] for p in data.pods}
    for outcome in data.outcomes:
        by_pod.setdefault(outcome.target.ref, []).append(outcome)
    healthy = [pod for pod, outcomes in by_pod.items() if outcomes and all(o.healthy for o in outcomes)]
    failing = [pod for pod in by_pod if pod not in healthy]
    details["pods"] = {
        pod.partition("/")[2] or pod: [o.as_detail() for o in outcomes] for pod, outcomes in by_pod.items()
    }
    pod_names = {p.ref: p.name for p in data.pods}

    def not_ready(line: str, pod: str) -> Finding:
        return POD_NOT_READY.at(line, namespace=params.namespace, pod=pod_names.get(pod, pod.partition("/")[2]))

    errors = [not_ready(o.message, o.target.ref) for o in data.outcomes if not o.healthy]
    errors += [not_ready(f"{pod}: not probed", pod) for pod, outcomes in by_pod.items() if not outcomes]
    total = len(by_pod)
    if not failing:
        return Result.ok(check, f"{name}: {total}/{total} pods answer {', '.join(params.paths)}", details)
    names = ", ".join(pod.partition("/")[2] for pod in failing)
    if healthy:
        return Result.degraded(check, f"{name}: {len(healthy)}/{total} pods healthy; failing: {names}", errors, details)
    return Result.failed(check, f"{name}: 0/{total} pods healthy; failing: {names}", errors, details)


def make_check(name: str, system: str, params: type[ManagerPodsParams]) -> CheckSpec[Any, ManagerPodsData]:
    """The CheckSpec of one system's manager check: this module's fetch and evaluate under the system's name."""
    return CheckSpec(
        name=name,
        system=system,
        layer="control plane",
        severity="critical",
        schedule_minutes=1,
        fails_when=FAILS_WHEN,
        params=params,
        fetch=fetch,
        evaluate=partial(evaluate, name),
        access=declared_access,
        runbooks=RUNBOOKS,
    )
