"""koord-webhook: does Koordinator's admission webhook answer, with ready endpoints and its configurations?

Upstream defaults (docs/contracts.md "Upstream facts", Koordinator): Service
`koordinator-system/koordinator-webhook-service` 443 → 9876 over HTTPS, `/healthz` on the webhook server
(koord-manager registers it there and probes it itself over TLS), configurations
`koordinator-mutating-webhook-configuration` and `koordinator-validating-webhook-configuration`. The
tutorial's `koordinator-admission` on 9443 works by configuration. The body of the check is
`outpost.families.webhook_wiring`, shared with kruise-webhook.
"""

from __future__ import annotations

from pydantic import Field

from outpost.families.webhook_wiring import WebhookServiceParams, make_check

NAME = "koord-webhook"


class KoordWebhookParams(WebhookServiceParams):
    namespace: str = "koordinator-system"
    service: str = "koordinator-webhook-service"
    mutating_configurations: list[str] = Field(default_factory=lambda: ["koordinator-mutating-webhook-configuration"])
    validating_configurations: list[str] = Field(
        default_factory=lambda: ["koordinator-validating-webhook-configuration"]
    )


CHECK = make_check(
    NAME,
    system="koordinator",
    params=KoordWebhookParams,
    manager="koord-manager",
)
