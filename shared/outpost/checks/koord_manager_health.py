"""koord-manager-health: does every koord-manager pod answer `/readyz` on its health port?

Upstream (docs/contracts.md "Koordinator"): Deployment `koordinator-system/koord-manager`, health port 8000 on no
Service, so each pod is asked through the pod proxy. The tutorial's `koordinator-manager` and `/healthz` on 8080
do not exist upstream; both are parameters. Its only check, `webhook-ready`, exists while the default-on gate
`WebhookFramework` is on (koordinator@v1.6.0 `cmd/koord-manager/main.go`, `pkg/features/features.go`), and
controller-runtime mounts only endpoints with checks, so with the gate off every path of 8000 is 404 and this
check (like upstream's own readinessProbe) fails every pod: turn the gate on, or disable the check and rely on
leader-leases (the metrics port would only prove the process serves HTTP).

Verdict (shared with kruise-manager-health, `outpost.families.manager_pods`): all ready = ok, some = degraded
naming the others, none, no pod or no Deployment = failed. A pod that hangs past `timeout_seconds` (2 s) is not
ready; the body must be controller-runtime's `ok` (`expect_body`, null to judge by status alone), so another
process on the port is not taken for readiness.
"""

from __future__ import annotations

from pydantic import Field

from outpost.families.manager_pods import ManagerPodsParams, make_check

NAME = "koord-manager-health"


class KoordManagerHealthParams(ManagerPodsParams):
    namespace: str = Field("koordinator-system", description="Namespace of the manager Deployment.")
    deployment: str = Field("koord-manager", description="The manager Deployment; its spec.selector finds the pods.")
    paths: list[str] = Field(
        default_factory=lambda: ["/readyz"],
        min_length=1,
        description="Health paths asked on every pod (koord-manager registers /readyz only).",
    )


CHECK = make_check(NAME, system="koordinator", params=KoordManagerHealthParams)
