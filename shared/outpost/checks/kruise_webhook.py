"""kruise-webhook: does OpenKruise's admission webhook answer, with ready endpoints and its configurations?

Upstream defaults (docs/contracts.md "Upstream facts", OpenKruise): the only Service,
`kruise-system/kruise-webhook-service`, 443 → 9876 over HTTPS, whose `/healthz` answers 200 with an empty
body (judged by status code); configurations `kruise-mutating-webhook-configuration` and
`kruise-validating-webhook-configuration`. The tutorial's port 9443 works by configuration. The body of the
check is `outpost.families.webhook_wiring`, shared with koord-webhook.
"""

from __future__ import annotations

from pydantic import Field

from outpost.families.webhook_wiring import WebhookServiceParams, make_check

NAME = "kruise-webhook"


class KruiseWebhookParams(WebhookServiceParams):
    namespace: str = "kruise-system"
    service: str = "kruise-webhook-service"
    mutating_configurations: list[str] = Field(default_factory=lambda: ["kruise-mutating-webhook-configuration"])
    validating_configurations: list[str] = Field(default_factory=lambda: ["kruise-validating-webhook-configuration"])


CHECK = make_check(
    NAME,
    system="openkruise",
    params=KruiseWebhookParams,
    manager="kruise-controller-manager",
)
