"""kruise-manager-health: does every kruise-controller-manager pod answer `/readyz` on its health port?

Upstream (docs/contracts.md "Upstream facts", OpenKruise): Deployment `kruise-controller-manager` in
`kruise-system` (label `control-plane=controller-manager`), health port 8000 (`--health-probe-addr`
default), on no Service (the tutorial's health on 8080 through a Service does not exist upstream), so
each pod is asked through the pod proxy, `/api/v1/namespaces/kruise-system/pods/POD:8000/proxy/readyz`.
The manager registers one readiness check, `webhook-ready`, and no liveness check
(`github.com/openkruise/kruise@v1.8.0, main.go`: only `mgr.AddReadyzCheck("webhook-ready", ...)`), and
controller-runtime mounts only the endpoints that have checks (`sigs.k8s.io/controller-runtime@v0.18.6,
pkg/manager/internal.go` `addHealthProbeServer`), so `/healthz` answers 404 on every healthy pod: it is
not asked by default. Healthy is 200 `ok`; a failing check is 500 `[-]webhook-ready failed: reason
withheld`. controller-runtime's verbose and failure bodies end `healthz check passed/failed` on `/readyz` too
(same module, `pkg/healthz/healthz.go` `writeStatusesAsText`): such a body does not mean `/healthz`
was asked.

Verdict (shared with koord-manager-health, `outpost.checks.manager_pods`): a pod is healthy when every
path answers 2xx with the body `ok` (`expect_body`; null judges by status code only, as upstream's
contract allows); every pod healthy = ok; some = degraded naming the failing pods and endpoints; none,
no pod (scaled to 0) or no Deployment = failed. A pod that hangs or answers later than
`timeout_seconds` (2 s) is unhealthy.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from outpost.checks import manager_pods
from outpost.checks.base import CheckSpec
from outpost.checks.manager_pods import ManagerPodsData, ManagerPodsParams
from outpost.cluster import Cluster
from outpost.result import Result

NAME = "kruise-manager-health"


class KruiseManagerHealthParams(ManagerPodsParams):
    namespace: str = Field("kruise-system", description="Namespace of the manager Deployment.")
    deployment: str = Field(
        "kruise-controller-manager", description="The manager Deployment; its spec.selector finds the pods."
    )
    paths: list[str] = Field(
        default_factory=lambda: ["/readyz"],
        min_length=1,
        description="Health paths asked on every pod, each must answer 2xx "
        "(kruise-manager registers /readyz only: /healthz answers 404).",
    )


def fetch(cluster: Cluster, params: KruiseManagerHealthParams) -> ManagerPodsData:
    return manager_pods.fetch(cluster, params)


def evaluate(data: ManagerPodsData, params: KruiseManagerHealthParams, now: datetime) -> Result:
    return manager_pods.evaluate(NAME, data, params)


CHECK = CheckSpec(
    name=NAME,
    system="openkruise",
    layer="control plane",
    severity="critical",
    schedule_minutes=1,
    fails_when="manager readyz not 200 (pod proxy :{port}{paths[0]} by default)",
    params=KruiseManagerHealthParams,
    fetch=fetch,
    evaluate=evaluate,
    access=manager_pods.declared_access,
)
