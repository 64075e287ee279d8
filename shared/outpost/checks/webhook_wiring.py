"""The one check body behind koord-webhook and kruise-webhook: does a system's admission webhook answer, and is
it wired to the API server?

Both systems ship a Service on 443 -> 9876 over HTTPS answering `/healthz` and Mutating/Validating configurations
calling it (docs/contracts.md "Upstream facts"), so each check is a thin module over this one. Observed:
`/healthz` through the service proxy with `https:`, classified by `outpost.cluster.probes`; the Service, its port
and a ready endpoint; every configuration calling that Service on that port (`outpost.kube.webhooks`). Each
missing piece is its own line and makes the result `failed`; a failed read other than 404 is `error`. A health
answer is not enough: a webhook whose configuration was deleted still answers, while the API server no longer
calls it (and failurePolicy `Ignore` hides that).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Literal

from pydantic import Field

from outpost.checks.base import CheckSpec, Params
from outpost.cluster import Cluster, ProbeOutcome, ProbeTarget, probe_all, service_proxy
from outpost.errors import ClusterResponseError
from outpost.kube import (
    ENDPOINT_SLICES,
    ENDPOINTS,
    SERVICES,
    Endpoints,
    EndpointSlice,
    Kind,
    Service,
    WebhookConfiguration,
    access,
    collection_path,
    object_path,
    parse,
    parse_items,
    ref,
)
from outpost.kube.objects import SERVICE_NAME_LABEL
from outpost.kube.webhooks import ReadyEndpoints, WebhookWiring, judge_wiring, ready_endpoints
from outpost.result import Result


class WebhookServiceParams(Params):
    """Where a system's webhook Service is and which configurations must call it (subclasses set the defaults)."""

    namespace: str = Field(description="Namespace of the webhook Service.")
    service: str = Field(description="Name of the webhook Service.")
    port: int = Field(443, ge=1, le=65535, description="Service port the webhook configurations call.")
    scheme: Literal["https", "http"] = Field(
        "https", description="Scheme the API server proxies with; webhooks serve TLS only, so https."
    )
    health_path: str = Field("/healthz", description="Health path of the webhook server, through the service proxy.")
    expect_body: str | None = Field(
        None, description="Body the health path must answer (stripped); None judges by status code only."
    )
    mutating_configurations: list[str] = Field(description="MutatingWebhookConfigurations that must call the Service.")
    validating_configurations: list[str] = Field(
        description="ValidatingWebhookConfigurations that must call the Service."
    )
    timeout_seconds: float = Field(
        5.0, gt=0, le=60, description="How long the health path may take before the webhook counts as not answering."
    )

    def wiring(self) -> WebhookWiring:
        return WebhookWiring(
            self.namespace,
            self.service,
            self.port,
            tuple(self.mutating_configurations),
            tuple(self.validating_configurations),
        )


@dataclass(frozen=True)
class WebhookWiringData:
    health: ProbeOutcome
    service: Service | None
    endpoints: ReadyEndpoints
    configurations: list[tuple[Kind, str, WebhookConfiguration | None]]


def fetch(cluster: Cluster, params: WebhookServiceParams) -> WebhookWiringData:
    wiring = params.wiring()
    target = ProbeTarget(
        ref=wiring.service_ref,
        label=f"{params.scheme}:{params.port}{params.health_path}",
        path=service_proxy(params.namespace, params.service, params.port, params.health_path, params.scheme),
        expect_body=params.expect_body,
    )
    (health,) = probe_all(cluster, [target], timeout=params.timeout_seconds)
    raw_service = cluster.get_object(object_path(SERVICES, params.service, params.namespace))
    service = None if raw_service is None else parse(Service, raw_service, wiring.service_ref)
    configurations: list[tuple[Kind, str, WebhookConfiguration | None]] = []
    for kind, name in wiring.configurations():
        raw = cluster.get_object(object_path(kind, name))
        configuration = None if raw is None else parse(WebhookConfiguration, raw, ref(kind.kind, name))
        configurations.append((kind, name, configuration))
    return WebhookWiringData(health, service, _read_endpoints(cluster, params), configurations)


def _read_endpoints(cluster: Cluster, params: WebhookServiceParams) -> ReadyEndpoints:
    where = ref("Service", params.service, params.namespace)
    try:
        raw_slices = cluster.list(
            collection_path(ENDPOINT_SLICES, params.namespace), label_selector=f"{SERVICE_NAME_LABEL}={params.service}"
        )
    except ClusterResponseError as error:
        if error.status_code != 404:  # 404: discovery.k8s.io not served; Endpoints still are
            raise
        raw_slices = []
    slices = parse_items(EndpointSlice, raw_slices, f"{where} endpointslices")
    endpoints = None
    if not any(s.service_name == params.service for s in slices):
        raw = cluster.get_object(object_path(ENDPOINTS, params.service, params.namespace))
        endpoints = None if raw is None else parse(Endpoints, raw, f"{where} endpoints")
    return ready_endpoints(params.service, slices, endpoints)


def declared_access(params: WebhookServiceParams) -> list[access.Access]:
    """The health path through the service proxy, the Service, its EndpointSlices, the configurations."""
    wiring = params.wiring()
    return [
        access.service_proxy(params.namespace, params.service, params.port, params.scheme),
        access.get(SERVICES, params.service, params.namespace),
        *(access.get(kind, name) for kind, name in wiring.configurations()),
        access.list_(ENDPOINT_SLICES, params.namespace),
        access.get(
            ENDPOINTS,
            params.service,
            params.namespace,
            when="the Service has no EndpointSlice (discovery.k8s.io not served, or the Service deleted)",
        ),
    ]


def evaluate(check: str, system: str, data: WebhookWiringData, params: WebhookServiceParams, now: datetime) -> Result:
    wiring = params.wiring()
    judgement = judge_wiring(wiring, data.service, data.endpoints, data.configurations)
    errors = ([] if data.health.healthy else [data.health.message]) + judgement.problems
    details: dict[str, Any] = {"health": data.health.as_detail(), **judgement.details}
    if errors:
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return Result.failed(check, f"{system} webhook: {errors[0]}{more}", errors, details)
    configurations = ", ".join(name for _, name, _ in data.configurations) or "none configured"
    summary = (
        f"{system} webhook {wiring.service_ref} answers {data.health.target.label} "
        f"({len(data.endpoints.ready)} ready endpoint(s)); called by {configurations}"
    )
    return Result.ok(check, summary, details)


FAILS_WHEN = (
    "webhook service not answering /healthz via the service proxy, no ready endpoints, or a webhook configuration "
    "missing or not calling the service"
)
"""What fails either system's webhook check: one body, so one sentence."""


def make_check(name: str, system: str, params: type[WebhookServiceParams]) -> CheckSpec[Any, WebhookWiringData]:
    """The CheckSpec of one system's webhook check: this module's fetch and evaluate under the system's name."""
    return CheckSpec(
        name=name,
        system=system,
        layer="control plane",
        severity="critical",
        schedule_minutes=1,
        fails_when=FAILS_WHEN,
        params=params,
        fetch=fetch,
        evaluate=partial(evaluate, name, system),
        access=declared_access,
    )
