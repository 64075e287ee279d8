"""kruise-manager-health: does every kruise-controller-manager pod answer `/healthz` and `/readyz`?

Upstream (docs/contracts.md "Upstream facts", OpenKruise): Deployment `kruise-controller-manager` in
`kruise-system`, health port 8000 with `/healthz` (check `ping`) and `/readyz` (check `webhook-ready`),
on no Service (the tutorial's health on 8080 through a Service does not exist upstream), so each pod
is asked through the pod proxy, `/api/v1/namespaces/kruise-system/pods/POD:8000/proxy/healthz`.
Healthy answers are 200 `ok`; a failing check answers 500 `[-]NAME failed: reason withheld`.

Verdict (shared with koord-manager-health, `outpost.checks.manager_pods`): a pod is healthy when both
paths answer 2xx with the body `ok` (`expect_body`; null judges by status code only, as upstream's
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
    deployment: str = Field("kruise-controller-manager",
                            description="The manager Deployment; its spec.selector finds the pods.")
    paths: list[str] = Field(default_factory=lambda: ["/healthz", "/readyz"], min_length=1,
                             description="Health paths asked on every pod, each must answer 2xx.")


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
    fails_when="/healthz or /readyz (pod proxy :8000) not 200",
    params=KruiseManagerHealthParams,
    fetch=fetch,
    evaluate=evaluate,
    access=manager_pods.declared_access,
)
