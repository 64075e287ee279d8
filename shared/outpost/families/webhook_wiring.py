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

from outpost.check import CheckSpec, Params
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
from outpost.kube.webhooks import (
    ReadyEndpoints,
    WebhookWiring,
    configuration_problems,
    endpoint_problems,
    judge_wiring,
    ready_endpoints,
    service_problems,
)
from outpost.result import Finding, Result
from outpost.runbook import Runbook

# The failure classes of both webhook checks, over the names each line gives: the Service (`{namespace}`,
# `{service}`, `{port}`), a configuration (`{resource}`, `{name}`) and the manager Deployment that serves the
# webhook (`{manager}`, the check's own: koord-manager, kruise-controller-manager).
MANAGER_LOG = "kubectl -n {namespace} logs deployment/{manager} --tail=200"
NOT_ANSWERING = Runbook(
    "not-answering",
    "The webhook server does not answer its health path through the Service",
    "the manager pods behind the Service are down, crash-looping or hanging, or their webhook server has not "
    "started (its certificate Secret not yet written); a 503 'error trying to reach service' means no pod "
    "accepts the connection on the Service's targetPort",
    "kubectl -n {namespace} get endpointslices -l kubernetes.io/service-name={service} -o wide && "
    "kubectl -n {namespace} get pods -o wide",
    MANAGER_LOG,
)
SERVICE_MISSING = Runbook(
    "service-missing",
    "The webhook Service does not exist",
    "deleted by hand or by a partial uninstall or upgrade (helm or kustomize), or the system installs it under another "
    "name than the check's `service` (a tutorial's name)",
    "kubectl -n {namespace} get services -o wide",
    MANAGER_LOG,
)
PORT_MISSING = Runbook(
    "port-missing",
    "The webhook Service does not expose the port its configurations call",
    "the Service was edited or re-rendered with another port (the tutorial's 9443 instead of upstream's 443), or "
    "the check's `port` does not match the installation",
    "kubectl -n {namespace} get service {service} -o yaml",
    MANAGER_LOG,
)
NO_READY_ENDPOINTS = Runbook(
    "no-ready-endpoints",
    "The webhook Service has no ready endpoint",
    "the manager is scaled to 0, its pods are not ready (`webhook-ready` fails until the webhook certificate is "
    "written) or crash-looping, or the Service's selector no longer matches their labels",
    "kubectl -n {namespace} describe service {service} && "
    "kubectl -n {namespace} get endpointslices -l kubernetes.io/service-name={service} -o wide",
    MANAGER_LOG,
)
CONFIGURATION_MISSING = Runbook(
    "configuration-missing",
    "A webhook configuration of the system does not exist",
    "deleted by hand or by a partial uninstall or upgrade; the manager only patches the configurations the install "
    "(chart or config/) created and does not recreate one, so the API server stops calling the webhook "
    "while its Service still has ready endpoints",
    "kubectl get {resource} && kubectl -n {namespace} get endpointslices -l kubernetes.io/service-name={service}",
    MANAGER_LOG,
)
CONFIGURATION_ELSEWHERE = Runbook(
    "configuration-elsewhere",
    "A webhook configuration does not call the system's webhook Service on its port",
    "the configuration was edited or re-rendered to call another Service, URL or port (a second installation, "
    "a tutorial's service name or port 9443)",
    "kubectl get {resource} {name} -o yaml",
    MANAGER_LOG,
)
RUNBOOKS = (
    NOT_ANSWERING,
    SERVICE_MISSING,
    PORT_MISSING,
    NO_READY_ENDPOINTS,
    CONFIGURATION_MISSING,
    CONFIGURATION_ELSEWHERE,
)
"""Every way a webhook check fails; `make_check` lists them in each system's CheckSpec."""


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


def _findings(data: WebhookWiringData, params: WebhookServiceParams, manager: str) -> list[Finding]:
    """The lines of `judge_wiring`, in its order, each with the next step of its class."""
    wiring = params.wiring()
    names = {"namespace": params.namespace, "service": params.service, "port": params.port, "manager": manager}
    findings = [] if data.health.healthy else [NOT_ANSWERING.at(data.health.message, **names)]
    service_class = SERVICE_MISSING if data.service is None else PORT_MISSING
    findings += [service_class.at(line, **names) for line in service_problems(wiring, data.service)]
    findings += [
        NO_READY_ENDPOINTS.at(line, **names) for line in endpoint_problems(wiring, data.service, data.endpoints)
    ]
    for kind, name, configuration in data.configurations:
        runbook = CONFIGURATION_MISSING if configuration is None else CONFIGURATION_ELSEWHERE
        findings += [
            runbook.at(line, **names, resource=kind.kind.lower(), name=name)
            for line in configuration_problems(wiring, kind, name, configuration)
        ]
    return findings


def evaluate(
    check: str, system: str, manager: str, data: WebhookWiringData, params: WebhookServiceParams, now: datetime
) -> Result:
    wiring = params.wiring()
    judgement = judge_wiring(wiring, data.service, data.endpoints, data.configurations)
    errors = _findings(data, params, manager)
    details: dict[str, Any] = {"health": data.health.as_detail(), **judgement.details}
    if errors:
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return Result.failed(check, f"{system} webhook: {errors[0].line}{more}", errors, details)
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


def make_check(
    name: str, system: str, params: type[WebhookServiceParams], manager: str
) -> CheckSpec[Any, WebhookWiringData]:
    """The CheckSpec of one system's webhook check: this module's fetch and evaluate under the system's name;
    `manager` is the Deployment serving the webhook, whose log the failure lines point at."""
    return CheckSpec(
        name=name,
        system=system,
        layer="control plane",
        severity="critical",
        schedule_minutes=1,
        fails_when=FAILS_WHEN,
        params=params,
        fetch=fetch,
        evaluate=partial(evaluate, name, system, manager),
        access=declared_access,
        runbooks=RUNBOOKS,
    )
