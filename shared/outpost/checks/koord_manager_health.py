"""koord-manager-health: does every koord-manager pod answer `/readyz` on its health port?

Upstream (docs/contracts.md "Upstream facts", Koordinator): Deployment `koord-manager` in
`koordinator-system` (label `koord-app=koord-manager`), health port 8000 (`--health-probe-addr`
default), on no Service, so each pod is asked through the pod proxy,
`/api/v1/namespaces/koordinator-system/pods/POD:8000/proxy/readyz`. The tutorial's `koordinator-manager`
Deployment and `/healthz` on 8080 do not exist upstream; both are parameters for clusters set up that way.

What the port serves (`github.com/koordinator-sh/koordinator@v1.6.0, cmd/koord-manager/main.go`): no
liveness check at all, so `/healthz` answers 404; the one readiness check, `webhook-ready`, is added only
when the feature gate `WebhookFramework` is on, which it is by default (`pkg/features/features.go`:
`WebhookFramework: {Default: true, PreRelease: Beta}`). controller-runtime mounts only endpoints that have
checks (`sigs.k8s.io/controller-runtime@v0.16.5, pkg/manager/internal.go` `addHealthProbeServer`), so a
manager started with `--feature-gates=WebhookFramework=false` answers 404 on every path of port 8000,
`/readyz` included: this check fails every pod of such a cluster, and so does upstream's own
readinessProbe (`httpGet` `readyz` on 8000, `koordinator-sh/charts versions/v1.6.0/templates/
koord-manager.yaml`). There the operator turns the gate back on, or, if running without the webhooks is
intended, disables this check (`enabled: false`) and relies on `leader-leases` for the manager; pointing
`paths` at the metrics port (`port: 8080`, `paths: [/metrics]`, `expect_body: null`) would prove only
that the process serves HTTP.

Verdict (shared with kruise-manager-health, `outpost.checks.manager_pods`): every pod ready = ok; some =
degraded, naming the failing pods; none, no pod at all (scaled to 0) or no Deployment = failed. A pod that
hangs or answers later than `timeout_seconds` (2 s) is not ready. The body must be controller-runtime's
`ok` by default (`expect_body`), so a 200 from something else on the port (another process bound
to 8000 in the pod's network) is not taken for readiness; `expect_body: null` judges by status code alone.
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
    paths: list[str] = Field(
        default_factory=lambda: ["/readyz"],
        min_length=1,
        description="Health paths asked on every pod (koord-manager registers /readyz only).",
    )


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
    fails_when="manager readyz not 200 (pod proxy :{port}{paths[0]} by default)",
    params=KoordManagerHealthParams,
    fetch=fetch,
    evaluate=evaluate,
    access=manager_pods.declared_access,
)
