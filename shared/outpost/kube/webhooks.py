"""Is an admission webhook wired to its Service? The pure judgement behind koord-webhook and kruise-webhook.

A webhook works only when its Service exposes the called port, has a ready endpoint (EndpointSlices, else
Endpoints; unset `ready` counts as ready, as the API says), and each configuration exists and calls that Service
on that port (docs/contracts.md "Upstream facts"). Each piece breaks alone, so each problem is one line naming
its object; a configuration calling other services names them, since "points elsewhere" and "missing" need
different fixes. `outpost.families.webhook_wiring` does the reading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from outpost.kube.messages import observed, ref
from outpost.kube.objects import Endpoints, EndpointSlice, Service, WebhookClientConfig, WebhookConfiguration
from outpost.kube.paths import MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS, Kind


@dataclass(frozen=True)
class WebhookWiring:
    """What one system's webhook should look like: its Service and the configurations that call it."""

    namespace: str
    service: str
    port: int
    mutating: tuple[str, ...] = ()
    validating: tuple[str, ...] = ()

    @property
    def service_ref(self) -> str:
        return ref("Service", self.service, self.namespace)

    def configurations(self) -> list[tuple[Kind, str]]:
        """(kind, name) of every configuration to read, mutating first."""
        return [(MUTATING_WEBHOOKS, name) for name in self.mutating] + [
            (VALIDATING_WEBHOOKS, name) for name in self.validating
        ]


@dataclass(frozen=True)
class ReadyEndpoints:
    """The Service's endpoints as the API publishes them."""

    source: str  # "endpointslices" | "endpoints" | "none"
    ready: tuple[str, ...] = ()
    not_ready: tuple[str, ...] = ()

    def as_detail(self) -> dict[str, Any]:
        return {"source": self.source, "ready": list(self.ready), "not_ready": list(self.not_ready)}


def ready_endpoints(service: str, slices: Sequence[EndpointSlice], endpoints: Endpoints | None) -> ReadyEndpoints:
    """Ready and not-ready addresses of `service`: from its EndpointSlices if it has any, else its Endpoints."""
    own = [s for s in slices if s.service_name == service]
    if own:
        ready = {address for s in own for e in s.endpoints if e.ready for address in e.addresses}
        not_ready = {address for s in own for e in s.endpoints if not e.ready for address in e.addresses}
        return ReadyEndpoints("endpointslices", tuple(sorted(ready)), tuple(sorted(not_ready - ready)))
    if endpoints is not None:
        ready = {a.ip for a in endpoints.ready_addresses}
        not_ready = {a.ip for a in endpoints.not_ready_addresses}
        return ReadyEndpoints("endpoints", tuple(sorted(ready)), tuple(sorted(not_ready - ready)))
    return ReadyEndpoints("none")


def service_problems(wiring: WebhookWiring, service: Service | None) -> list[str]:
    if service is None:
        return [f"{wiring.service_ref}: not found (want the webhook Service, port {wiring.port})"]
    if service.port(wiring.port) is None:
        ports = sorted(p.port for p in service.spec.ports)
        return [observed("Service", wiring.service, wiring.namespace, f"ports {ports}", f"port {wiring.port}")]
    return []


def endpoint_problems(wiring: WebhookWiring, service: Service | None, endpoints: ReadyEndpoints) -> list[str]:
    if service is None or endpoints.ready:
        return []
    where = {"none": "no EndpointSlice or Endpoints", "endpointslices": "EndpointSlices", "endpoints": "Endpoints"}[
        endpoints.source
    ]
    not_ready = f", {len(endpoints.not_ready)} not ready" if endpoints.not_ready else ""
    return [
        observed(
            "Service",
            wiring.service,
            wiring.namespace,
            f"0 ready endpoints ({where}{not_ready})",
            ">= 1 ready endpoint",
        )
    ]


def configuration_problems(
    wiring: WebhookWiring, kind: Kind, name: str, configuration: WebhookConfiguration | None
) -> list[str]:
    """What is wrong with one configuration's wiring to the Service ([] when at least one webhook calls it)."""
    what = ref(kind.kind, name)
    target = f"service {wiring.namespace}/{wiring.service}:{wiring.port}"
    if configuration is None:
        return [f"{what}: not found (want webhooks calling {target})"]
    calling = configuration.webhooks_for(wiring.namespace, wiring.service)
    if not calling:
        elsewhere = sorted({_callee(w.client_config) for w in configuration.webhooks})
        seen = f"webhooks calling {', '.join(elsewhere)}" if elsewhere else "no webhooks"
        return [f"{what}: observed {seen} (want webhooks calling {target})"]
    return [
        f"{what} webhook {w.name}: observed service port {w.client_config.service.port} (want {wiring.port})"
        for w in calling
        if w.client_config.service is not None and w.client_config.service.port != wiring.port
    ]


def _callee(client_config: WebhookClientConfig) -> str:
    service = client_config.service
    if service is not None:
        return f"service {service.namespace}/{service.name}:{service.port}"
    return f"url {client_config.url}" if client_config.url else "nothing"


@dataclass(frozen=True)
class WiringJudgement:
    problems: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def judge_wiring(
    wiring: WebhookWiring,
    service: Service | None,
    endpoints: ReadyEndpoints,
    configurations: Sequence[tuple[Kind, str, WebhookConfiguration | None]],
) -> WiringJudgement:
    """Every wiring problem, one line each, and the details a person reads next to them."""
    problems = service_problems(wiring, service) + endpoint_problems(wiring, service, endpoints)
    config_details = []
    for kind, name, configuration in configurations:
        problems += configuration_problems(wiring, kind, name, configuration)
        calling = [] if configuration is None else configuration.webhooks_for(wiring.namespace, wiring.service)
        config_details.append(
            {
                "kind": kind.kind,
                "name": name,
                "found": configuration is not None,
                "webhooks": [
                    {
                        "name": w.name,
                        "failure_policy": w.failure_policy,
                        "timeout_seconds": w.timeout_seconds,
                        "path": w.client_config.service.path if w.client_config.service else None,
                    }
                    for w in calling
                ],
            }
        )
    details = {
        "service": f"{wiring.namespace}/{wiring.service}:{wiring.port}",
        "service_found": service is not None,
        "endpoints": endpoints.as_detail(),
        "configurations": config_details,
    }
    return WiringJudgement(problems, details)
