"""webhook-cert-expiry: do the admission webhooks' CA bundles and serving certificates outlive the threshold?

Either expiring stops admission (or, with failurePolicy Ignore, silently skips it):
- the `caBundle` of every webhook of each configured Mutating/ValidatingWebhookConfiguration: always judged;
- the serving certificate, which no outside-in handshake reaches (the API server's proxy terminates TLS), from:
  - keyless `cert_manager_certificates` (default none): a cert-manager `Certificate`'s `status.notAfter`
    (cert-manager `pkg/apis/certmanager/v1/types_certificate.go`), granted by name without a warning since it holds
    no key; not found or never issued is `failed`;
  - opt-in `read_serving_secrets: true` (default false): the manager's certificate Secret by name
    (`serving_secrets`). A Secret GET returns the private keys too, and RBAC cannot grant one key, so `outpost
    rbac` warns. Koordinator v1.6.0 and OpenKruise v1.8.0 sign their own (no cert-manager), so for them this is
    the only source; by default admission-dry-run catches a serving certificate the API server refuses.

Upstream's Secrets (`serving_secrets` default, both following the manager's `SECRET_NAME`):
`kruise-system/kruise-webhook-certs` and `koordinator-system/koordinator-webhook-certs` (`pkg/webhook/util/util.go`
GetSecretName in kruise@v1.8.0 and koordinator@v1.6.0; docs/contracts.md "Upstream facts"). Both hold a 10-year
self-signed CA (CN `webhook-cert-ca`) and leaf and renew within about six months, so a healthy install shows about
3650 days and a finding means renewal is broken. `cert.pem` is read (else `tls.crt`); no other key's value is kept,
logged or quoted. Params are strict: `serving_secrets` without the opt-in, or the opt-in with none, is refused.

Judgement (`threshold_days`, 21): the earliest `notAfter` of a bundle's certificates (a rotation holds two). A
caBundle empty, not base64 or not a PEM certificate, a missing configuration, Certificate or Secret, or a Secret
without a certificate is `failed` and named; 401/403 (the Secret's RBAC not granted) and a `status.notAfter`
without a zone are `error`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.errors import MalformedResponse
from outpost.kube import access
from outpost.kube.certificates import (
    CertificateInfo,
    NotACertificate,
    describe_left,
    earliest_expiry,
    parse_base64_pem_bundle,
    parse_base64_pem_chain,
)
from outpost.kube.messages import ref
from outpost.kube.objects import WebhookConfiguration, parse
from outpost.kube.paths import MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS, Kind, object_path
from outpost.kube.timestamps import parse_time
from outpost.result import Finding, Result
from outpost.runbook import Runbook

NAME = "webhook-cert-expiry"
FAILS_WHEN = (
    "webhook caBundle, or serving cert where read (a cert-manager Certificate's status.notAfter, keyless; "
    "opt-in `read_serving_secrets`: its Secret, private keys included), expires within the threshold "
    "({threshold_days:g} days)"
)

# The failure classes, over the names a line gives: a configuration (`{resource}`, `{name}`, and where the Secret its
# CA comes from would be, `{secrets_in}`: the namespace of the Services its webhooks call), a Secret or a cert-manager
# Certificate (`{namespace}`, `{name}`). No command prints a Secret's data: `get` lists names, `describe` keys.
ADMISSION_PAGE = "https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/"
CONFIGURATION_MISSING = Runbook(
    "configuration-missing",
    "A webhook configuration whose caBundle the check judges does not exist",
    "deleted by hand or by a partial uninstall or upgrade; koord-manager and kruise-manager only patch the "
    "configurations the install (chart or config/) created and do not recreate one",
    "kubectl get {resource}",
    ADMISSION_PAGE,
)
CA_BUNDLE_INVALID = Runbook(
    "ca-bundle-invalid",
    "A webhook's caBundle is empty or not a PEM certificate",
    "the manager has not injected its CA yet (down since the install) or something re-applied the install's "
    "manifest over it (a GitOps sync restoring Koordinator's chart's placeholder caBundle `Cg==`); the API server "
    "cannot verify the webhook",
    "kubectl get {resource} {name} -o yaml && kubectl get secrets {secrets_in}",
    ADMISSION_PAGE,
)
CA_BUNDLE_EXPIRING = Runbook(
    "ca-bundle-expiring",
    "A webhook's caBundle certificate expires within the threshold",
    "the CA renewal is broken: both managers regenerate their 10-year self-signed CA (ca-cert.pem of their "
    "certificate Secret) months before it expires and inject it, so an expiring bundle was put there by "
    "something else (a copied manifest, cert-manager's cainjector not running) or the manager is not running to "
    "renew it",
    "kubectl get {resource} {name} -o 'custom-columns=CA:.webhooks[0].clientConfig.caBundle' --no-headers | "
    "base64 -d | openssl x509 -noout -subject -enddate && kubectl get secrets {secrets_in}",
    ADMISSION_PAGE,
)
SECRET_MISSING = Runbook(
    "secret-missing",
    "The webhook's certificate Secret does not exist",
    "deleted by hand or with its namespace's cleanup; the manager writes it again when it starts (restart the "
    "manager's pods), or its SECRET_NAME environment variable names another Secret",
    "kubectl -n {namespace} get secrets",
    "kubectl -n {namespace} get events --sort-by=.lastTimestamp",
)
SERVING_CERT = Runbook(
    "serving-cert",
    "The webhook's serving certificate in its Secret is absent, unreadable or expiring",
    "the manager failed to renew it (it regenerates a pair due within about six months when it runs), or "
    "something else wrote the Secret with other keys or an older pair",
    "kubectl -n {namespace} describe secret {name}",
    "kubectl -n {namespace} get events --sort-by=.lastTimestamp",
)
CERTIFICATE_MISSING = Runbook(
    "certificate-missing",
    "The cert-manager Certificate of the webhook does not exist",
    "cert-manager is not installed (its API group is not served) or the Certificate was deleted or is named "
    "otherwise than `cert_manager_certificates` says",
    "kubectl api-resources --api-group=cert-manager.io",
    "https://cert-manager.io/docs/usage/certificate/",
)
CERTIFICATE_NOT_RENEWED = Runbook(
    "certificate-not-renewed",
    "The cert-manager Certificate was never issued or expires within the threshold",
    "its Issuer is not ready or refuses the request (a CA Secret missing, an ACME or external CA error), or "
    "cert-manager itself is not running",
    "kubectl -n {namespace} describe certificates.cert-manager.io {name}",
    "https://cert-manager.io/docs/troubleshooting/",
)
NOTHING_CONFIGURED = Runbook(
    "nothing-configured",
    "The check is configured to judge nothing",
    "configurations and cert_manager_certificates are empty and read_serving_secrets is off: set at least one",
    "kubectl get mutatingwebhookconfigurations,validatingwebhookconfigurations",
    "docs/configuration.md",
)

RUNBOOKS = (
    CONFIGURATION_MISSING,
    CA_BUNDLE_INVALID,
    CA_BUNDLE_EXPIRING,
    SECRET_MISSING,
    SERVING_CERT,
    CERTIFICATE_MISSING,
    CERTIFICATE_NOT_RENEWED,
    NOTHING_CONFIGURED,
)

SHOWN = 3
"""Webhook names listed per problem line (a kruise configuration has dozens sharing one caBundle)."""
CERT_MANAGER_CERTIFICATES = Kind("Certificate", "cert-manager.io", "v1", "certificates", namespaced=True)
"""cert-manager's Certificate (a CRD: not in `outpost.kube.paths.KINDS`, which holds the kinds every cluster has or
the systems' own)."""


class WebhookConfigurationRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["mutating", "validating"]
    name: str = Field(min_length=1)


class CertificateRef(BaseModel):
    """A cert-manager Certificate (`cert-manager.io/v1`) that issues a webhook's serving certificate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)


class ServingSecretRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str = Field(min_length=1)
    name: str = Field(min_length=1)
    keys: list[str] = Field(
        default_factory=lambda: ["cert.pem", "tls.crt"],
        min_length=1,
        description="Data keys holding the serving certificate, first present wins.",
    )


DEFAULT_CONFIGURATIONS = [
    WebhookConfigurationRef(kind="mutating", name="koordinator-mutating-webhook-configuration"),
    WebhookConfigurationRef(kind="validating", name="koordinator-validating-webhook-configuration"),
    WebhookConfigurationRef(kind="mutating", name="kruise-mutating-webhook-configuration"),
    WebhookConfigurationRef(kind="validating", name="kruise-validating-webhook-configuration"),
]
DEFAULT_SERVING_SECRETS = [
    ServingSecretRef(namespace="koordinator-system", name="koordinator-webhook-certs"),
    ServingSecretRef(namespace="kruise-system", name="kruise-webhook-certs"),
]


class WebhookCertExpiryParams(Params):
    threshold_days: float = Field(21.0, gt=0, le=3650, description="Fail when a certificate expires within this.")
    configurations: list[WebhookConfigurationRef] = Field(
        default_factory=lambda: list(DEFAULT_CONFIGURATIONS),
        description="Webhook configurations whose every caBundle is judged.",
    )
    cert_manager_certificates: list[CertificateRef] = Field(
        default_factory=list,
        description="Keyless serving-certificate source: cert-manager Certificates whose status.notAfter is judged.",
    )
    read_serving_secrets: bool = Field(
        False,
        description="Opt-in: read the serving certificate from `serving_secrets`; the probe then holds the "
        "webhooks' private keys (a Secret GET returns the whole object; see the module doc).",
    )
    serving_secrets: list[ServingSecretRef] = Field(
        default_factory=lambda: list(DEFAULT_SERVING_SECRETS),
        description="Secrets the webhooks serve their certificate from, read only with read_serving_secrets.",
    )

    @model_validator(mode="after")
    def _secrets_only_when_opted_in(self) -> WebhookCertExpiryParams:
        if self.read_serving_secrets and not self.serving_secrets:
            raise ValueError(
                "read_serving_secrets is true but serving_secrets is empty (name the Secrets, or "
                "leave read_serving_secrets off)"
            )
        if "serving_secrets" in self.model_fields_set and self.serving_secrets and not self.read_serving_secrets:
            raise ValueError(
                "serving_secrets is read only with read_serving_secrets: true, which grants the probe "
                "the webhooks' private keys (set it to opt in, or drop serving_secrets)"
            )
        return self

    def secrets_read(self) -> list[ServingSecretRef]:
        """The Secrets `fetch` reads: none unless opted in."""
        return list(self.serving_secrets) if self.read_serving_secrets else []


@dataclass(frozen=True)
class ConfigurationSeen:
    ref: WebhookConfigurationRef
    configuration: WebhookConfiguration | None


@dataclass(frozen=True)
class SecretSeen:
    ref: ServingSecretRef
    found: bool
    key: str | None = None
    certificate_b64: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class CertificateSeen:
    ref: CertificateRef
    found: bool
    not_after: datetime | None = None
    ready: str | None = None
    """The Ready condition's status (`True`/`False`/`Unknown`), None when absent: shown, not judged."""


@dataclass(frozen=True)
class WebhookCertData:
    configurations: list[ConfigurationSeen]
    secrets: list[SecretSeen]
    certificates: list[CertificateSeen] = field(default_factory=list)


def _kind(ref_: WebhookConfigurationRef) -> str:
    return "MutatingWebhookConfiguration" if ref_.kind == "mutating" else "ValidatingWebhookConfiguration"


def fetch(cluster: Cluster, params: WebhookCertExpiryParams) -> WebhookCertData:
    configurations = []
    for wanted in params.configurations:
        kind = MUTATING_WEBHOOKS if wanted.kind == "mutating" else VALIDATING_WEBHOOKS
        path = object_path(kind, wanted.name)
        raw = cluster.get_object(path)
        configurations.append(
            ConfigurationSeen(wanted, None if raw is None else parse(WebhookConfiguration, raw, f"GET {path}"))
        )
    certificates = [_certificate(cluster, wanted) for wanted in params.cert_manager_certificates]
    secrets = [_serving_certificate(cluster, wanted) for wanted in params.secrets_read()]
    return WebhookCertData(configurations, secrets, certificates)


def declared_access(params: WebhookCertExpiryParams) -> list[access.Access]:
    """Each configuration by name, each cert-manager Certificate by name in its namespace, and, only with
    `read_serving_secrets`, each serving-certificate Secret by name in its namespace; nothing else."""
    needed: list[access.Access] = [
        access.get(MUTATING_WEBHOOKS if w.kind == "mutating" else VALIDATING_WEBHOOKS, w.name)
        for w in params.configurations
    ]
    needed += [access.get(CERT_MANAGER_CERTIFICATES, c.name, c.namespace) for c in params.cert_manager_certificates]
    needed += [access.get(SECRETS, s.name, s.namespace) for s in params.secrets_read()]
    return needed


def _certificate(cluster: Cluster, wanted: CertificateRef) -> CertificateSeen:
    path = object_path(CERT_MANAGER_CERTIFICATES, wanted.name, wanted.namespace)
    raw = cluster.get_object(path)
    if raw is None:
        return CertificateSeen(wanted, found=False)
    status = raw.get("status")
    status = status if isinstance(status, dict) else {}
    try:
        not_after = parse_time(status.get("notAfter"))
    except ValueError as error:
        raise MalformedResponse(f"GET {path}: status.notAfter: {error}") from None
    conditions = status.get("conditions")
    ready = (
        next((str(c.get("status")) for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), None)
        if isinstance(conditions, list)
        else None
    )
    return CertificateSeen(wanted, found=True, not_after=not_after, ready=ready)


def _serving_certificate(cluster: Cluster, wanted: ServingSecretRef) -> SecretSeen:
    """Only the certificate value survives this function (module doc: the key is never kept)."""
    raw = cluster.get_object(object_path(SECRETS, wanted.name, wanted.namespace))
    if raw is None:
        return SecretSeen(wanted, found=False)
    data = raw.get("data")
    values = data if isinstance(data, dict) else {}
    for key in wanted.keys:
        value = values.get(key)
        if isinstance(value, str):
            return SecretSeen(wanted, found=True, key=key, certificate_b64=value)
    return SecretSeen(wanted, found=True)


def _judge_bundle(certificates: list[CertificateInfo], now: datetime, threshold: float) -> tuple[str, bool]:
    first = earliest_expiry(certificates)
    return f"{first.subject} {describe_left(first, now)}", first.days_left(now) <= threshold


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _secrets_in(seen: ConfigurationSeen) -> str:
    """Where to list the Secret a configuration's CA comes from: the namespace(s) of the Services its webhooks call
    (the managers keep their certificate Secret beside their webhook Service), or every namespace."""
    webhooks = seen.configuration.webhooks if seen.configuration else []
    namespaces = sorted({w.client_config.service.namespace for w in webhooks if w.client_config.service})
    return f"-n {namespaces[0]}" if len(namespaces) == 1 else "--all-namespaces"


def _judge_configuration(
    seen: ConfigurationSeen, params: WebhookCertExpiryParams, now: datetime
) -> tuple[dict[str, Any], list[Finding]]:
    where = ref(_kind(seen.ref), seen.ref.name)
    names = {"resource": _kind(seen.ref).lower(), "name": seen.ref.name, "secrets_in": _secrets_in(seen)}
    if seen.configuration is None:
        line = f"{where}: not found (want it present, with a caBundle per webhook)"
        return {"found": False}, [CONFIGURATION_MISSING.at(line, **names)]
    by_bundle: dict[str, list[str]] = {}
    system_trust: list[str] = []
    for webhook in seen.configuration.webhooks:
        bundle = webhook.client_config.ca_bundle
        if not bundle.strip() and webhook.client_config.url and webhook.client_config.service is None:
            system_trust.append(webhook.name)  # a URL webhook without caBundle is verified with system roots
            continue
        by_bundle.setdefault(bundle, []).append(webhook.name)
    bundles: list[dict[str, Any]] = []
    errors: list[Finding] = []
    for bundle, webhooks in by_bundle.items():
        entry: dict[str, Any] = {"webhooks": webhooks}
        try:
            certificates = parse_base64_pem_bundle(bundle)
        except NotACertificate as error:
            entry["problem"] = f"not a certificate: {error}"
            line = (
                f"{where}: webhook {_names(webhooks)} caBundle is not a certificate ({error}) "
                "(want a base64 PEM CA bundle)"
            )
            errors.append(CA_BUNDLE_INVALID.at(line, **names))
            bundles.append(entry)
            continue
        entry["certificates"] = [c.details(now) for c in certificates]
        described, expiring = _judge_bundle(certificates, now, params.threshold_days)
        entry["earliest"] = described
        if expiring:
            line = (
                f"{where}: webhook {_names(webhooks)} caBundle certificate {described} "
                f"(want > {params.threshold_days:g} days)"
            )
            errors.append(CA_BUNDLE_EXPIRING.at(line, **names))
        bundles.append(entry)
    details: dict[str, Any] = {"found": True, "webhooks": len(seen.configuration.webhooks), "bundles": bundles}
    if system_trust:
        details["system_trust"] = system_trust
    return details, errors


def _located(kind: str, located: ServingSecretRef | CertificateRef) -> tuple[str, dict[str, str]]:
    """The message prefix of a namespaced object the check reads, and the runbook fields naming it."""
    return ref(kind, located.name, located.namespace), {"namespace": located.namespace, "name": located.name}


def _judge_secret(
    seen: SecretSeen, params: WebhookCertExpiryParams, now: datetime
) -> tuple[dict[str, Any], list[Finding]]:
    where, names = _located("Secret", seen.ref)
    if not seen.found:
        line = f"{where}: not found (want the webhook's serving certificate there)"
        return {"found": False}, [SECRET_MISSING.at(line, **names)]
    if seen.certificate_b64 is None or seen.key is None:
        line = f"{where}: none of the keys {', '.join(seen.ref.keys)} present (want the serving certificate)"
        return {"found": True}, [SERVING_CERT.at(line, **names)]
    try:
        certificates = parse_base64_pem_chain(seen.certificate_b64)
    except NotACertificate as error:
        line = f"{where}: {seen.key} is not a certificate ({error}) (want a PEM serving certificate)"
        return (
            {"found": True, "key": seen.key, "problem": f"not a certificate: {error}"},
            [SERVING_CERT.at(line, **names)],
        )
    details = {"found": True, "key": seen.key, "certificates": [c.details(now) for c in certificates]}
    # The serving certificate is the first block; anything after it is its chain, judged alike.
    described, expiring = _judge_bundle(certificates, now, params.threshold_days)
    details["earliest"] = described
    if expiring:
        line = f"{where}: serving certificate {seen.key}: {described} (want > {params.threshold_days:g} days)"
        return details, [SERVING_CERT.at(line, **names)]
    return details, []


def _judge_certificate(
    seen: CertificateSeen, params: WebhookCertExpiryParams, now: datetime
) -> tuple[dict[str, Any], list[Finding]]:
    where, names = _located("Certificate", seen.ref)
    if not seen.found:
        line = (
            f"{where}: not found (want the cert-manager Certificate of the webhook's serving "
            "certificate; is cert-manager installed?)"
        )
        return {"found": False}, [CERTIFICATE_MISSING.at(line, **names)]
    if seen.not_after is None:
        line = (
            f"{where}: status.notAfter absent, never issued (Ready {seen.ready or 'absent'}) "
            "(want an issued certificate)"
        )
        return {"found": True, "ready": seen.ready}, [CERTIFICATE_NOT_RENEWED.at(line, **names)]
    days = (seen.not_after - now).total_seconds() / 86400.0
    when = seen.not_after.isoformat()
    described = f"expired {-days:.1f} days ago ({when})" if days <= 0 else f"expires in {days:.1f} days ({when})"
    details = {
        "found": True,
        "ready": seen.ready,
        "not_after": when,
        "days_left": round(days, 2),
        "earliest": described,
    }
    if days <= params.threshold_days:
        line = f"{where}: serving certificate (status.notAfter) {described} (want > {params.threshold_days:g} days)"
        return details, [CERTIFICATE_NOT_RENEWED.at(line, **names)]
    return details, []


def _serving_source(params: WebhookCertExpiryParams) -> str:
    sources = [
        *(["cert-manager"] if params.cert_manager_certificates else []),
        *(["secrets"] if params.read_serving_secrets else []),
    ]
    return " and ".join(sources) or "not read (read_serving_secrets is off)"


def evaluate(data: WebhookCertData, params: WebhookCertExpiryParams, now: datetime) -> Result:
    errors: list[Finding] = []
    configurations: dict[str, Any] = {}
    for seen in data.configurations:
        details, problems = _judge_configuration(seen, params, now)
        configurations[ref(_kind(seen.ref), seen.ref.name)] = details
        errors += problems
    certificates: dict[str, Any] = {}
    for certificate in data.certificates:
        details, problems = _judge_certificate(certificate, params, now)
        certificates[f"{certificate.ref.namespace}/{certificate.ref.name}"] = details
        errors += problems
    secrets: dict[str, Any] = {}
    for secret in data.secrets:
        details, problems = _judge_secret(secret, params, now)
        secrets[f"{secret.ref.namespace}/{secret.ref.name}"] = details
        errors += problems
    details_all = {
        "threshold_days": params.threshold_days,
        "configurations": configurations,
        "serving_certificates": _serving_source(params),
        "cert_manager_certificates": certificates,
        "serving_secrets": secrets,
    }
    if errors:
        summary = f"{len(errors)} webhook certificate problem(s): {errors[0].line}"
        return Result.failed(NAME, summary, errors, details_all)
    if not data.configurations and not data.secrets and not data.certificates:
        line = (
            f"{NAME}: nothing configured to judge (configurations and cert_manager_certificates are empty, "
            "and no serving_secrets are read)"
        )
        return Result.unobserved(NAME, line, [NOTHING_CONFIGURED.at(line)], details_all)
    judged = [f"{len(data.configurations)} webhook configuration(s)"]
    if data.certificates:
        judged.append(f"{len(data.certificates)} cert-manager Certificate(s)")
    if data.secrets:
        judged.append(f"{len(data.secrets)} serving certificate Secret(s)")
    unread = "" if data.secrets or data.certificates else "; serving certificates not read (read_serving_secrets off)"
    return Result.ok(NAME, f"{' and '.join(judged)} valid beyond {params.threshold_days:g} days{unread}", details_all)


CHECK = CheckSpec(
    name=NAME,
    system="koordinator / openkruise",
    layer="control plane",
    severity="warning",
    schedule_minutes=60,
    fails_when=FAILS_WHEN,
    params=WebhookCertExpiryParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
    extras=("certificates",),
)
