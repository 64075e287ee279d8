"""kruise-manager-health: does every kruise-controller-manager pod answer `/readyz` on its health port?

Upstream (docs/contracts.md "OpenKruise"): Deployment `kruise-system/kruise-controller-manager`, health port 8000
on no Service (the tutorial's 8080 Service does not exist), so each pod is asked through the pod proxy. It
registers only the readiness check `webhook-ready` (openkruise/kruise@v1.8.0 `main.go`) and controller-runtime
mounts only endpoints with checks (controller-runtime@v0.18.6 `pkg/manager/internal.go`), so `/healthz` is 404 on
a healthy pod and is not asked by default. Bodies ending `healthz check passed/failed` come from `/readyz` too.
Verdict as koord-manager-health (`outpost.families.manager_pods`), body `ok` expected, 2 s timeout.
"""

from __future__ import annotations

from pydantic import Field

from outpost.families.manager_pods import ManagerPodsParams, make_check

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


CHECK = make_check(NAME, system="openkruise", params=KruiseManagerHealthParams)
