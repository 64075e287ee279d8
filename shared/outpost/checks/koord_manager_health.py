"""koord-manager-health: does every koord-manager pod answer `/readyz` on its health port?

Upstream (docs/contracts.md "Upstream facts", Koordinator): Deployment `koord-manager` in
`koordinator-system`, health port 8000 serving `/readyz` only (no `/healthz` is registered: it would
answer 404), on no Service, so each pod is asked through the pod proxy,
`/api/v1/namespaces/koordinator-system/pods/POD:8000/proxy/readyz`. The tutorial's `koordinator-manager`
Deployment and `/healthz` on 8080 do not exist upstream; both are parameters for clusters set up that way.

Verdict (shared with kruise-manager-health, `outpost.checks.manager_pods`): every pod ready = ok; some =
degraded, naming the failing pods; none, no pod at all (scaled to 0) or no Deployment = failed. A pod that
hangs or answers later than `timeout_seconds` (2 s) is not ready. The body must be controller-runtime's
`ok` by default (`expect_body`), so a 200 from something else on the port (the sandbox's
`backend-wrong-body`) is not taken for readiness; `expect_body: null` judges by status code alone.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from outpost.checks import manager_pods
from outpost.checks.base import CheckSpec
from outpost.checks.manager_pods import ManagerPodsData, ManagerPodsParams
from outpost.cluster import Cluster
from outpost.result import Result

NAME = "koord-manager-health"


class KoordManagerHealthParams(ManagerPodsParams):
    namespace: str = Field("koordinator-system", description="Namespace of the manager Deployment.")
    deployment: str = Field("koord-manager", description="The manager Deployment; its spec.selector finds the pods.")
    paths: list[str] = Field(default_factory=lambda: ["/readyz"], min_length=1,
                             description="Health paths asked on every pod (koord-manager registers /readyz only).")


def fetch(cluster: Cluster, params: KoordManagerHealthParams) -> ManagerPodsData:
    return manager_pods.fetch(cluster, params)


def evaluate(data: ManagerPodsData, params: KoordManagerHealthParams, now: datetime) -> Result:
    return manager_pods.evaluate(NAME, data, params)


CHECK = CheckSpec(
    name=NAME,
    system="koordinator",
    layer="control plane",
    severity="critical",
    schedule_minutes=1,
    fails_when="manager readyz not 200 (pod proxy :8000/readyz by default)",
    params=KoordManagerHealthParams,
    fetch=fetch,
    evaluate=evaluate,
    access=manager_pods.declared_access,
)
