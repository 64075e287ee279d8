"""admission-dry-run: does each system's mutating webhook really mutate a pod the API server admits?

Why this check exists: Koordinator's and OpenKruise's pod webhooks run with failurePolicy `Ignore`
(docs/contracts.md "Upstream facts"), so a dead, hanging, mis-certified or silently broken webhook does not
block anything: pods are admitted unmutated (a BE pod without its QoS class, a pod without its readiness
gate) and no health endpoint says so. Only an admission that really runs shows it. This check creates one
pod per configured system with `dryRun=All` through `Cluster.dry_run_create` (the seam cannot leave
`dryRun` out: the admission chain runs, nothing is stored) and asserts the mutation the system promises.

Per system (parameter `systems`; defaults are the sandbox's and upstream's shapes, each configurable):
- Koordinator: a pod labelled `koordinator.sh/enable-colocation=true` (the selector of upstream's sample
  ClusterColocationProfile) must come back as a BE pod, label `koordinator.sh/qosClass=BE`;
- OpenKruise: a pod labelled `apps.kruise.io/inject-readiness-gate=true` must come back with the readiness
  gate `KruisePodReady` (a SidecarSet-style rule is expressed with `pod_labels` and `want_containers`).

Verdicts:
- admitted and mutated as wanted = healthy for that system;
- admitted without (all of) the mutation = failed, naming what is missing and the configuration's webhooks
  that should have done it (or that the configuration is gone);
- refused by a webhook (denied, or failurePolicy `Fail` with the webhook down, timing out or untrusted: the
  API server's `Status` names it) = failed, naming the webhook;
- our identity refused (401/403 from RBAC), rate limited (429), redirected, any other refusal that names no
  webhook, a malformed answer, or no answer at all = error (not observed), never ok.

The probe identity may `create pods` only in its own namespace (`outpost.rbac`, default `outpost-probe`),
and only ever sends dry runs; the e2e tests list that namespace after a run to prove nothing was stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field, model_validator

from outpost.checks.base import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.cluster.client import admission_webhook_named
from outpost.errors import MalformedResponse
from outpost.kube import (
    MUTATING_WEBHOOKS,
    PODS,
    Pod,
    WebhookConfiguration,
    access,
    collection_path,
    object_path,
    parse,
    ref,
)
from outpost.kube.objects import Webhook
from outpost.result import Result, Status

NAME = "admission-dry-run"
_PREVIEW = 200


class MutationCase(Params):
    """One system's promise: a pod shaped like this is admitted with these changes."""

    system: str = Field(description="Name used in messages, e.g. koordinator.")
    configuration: str = Field(description="The MutatingWebhookConfiguration expected to mutate the pod.")
    pod_labels: dict[str, str] = Field(default_factory=dict, description="Labels that make the webhook act.")
    pod_annotations: dict[str, str] = Field(default_factory=dict)
    want_labels: dict[str, str] = Field(default_factory=dict, description="Labels the admitted pod must carry.")
    want_annotations: dict[str, str] = Field(default_factory=dict)
    want_readiness_gates: list[str] = Field(default_factory=list,
                                            description="Readiness gate condition types the pod must carry.")
    want_containers: list[str] = Field(default_factory=list,
                                       description="Container names the pod must carry (e.g. an injected sidecar).")

    @model_validator(mode="after")
    def _wants_something(self) -> MutationCase:
        if not (self.want_labels or self.want_annotations or self.want_readiness_gates or self.want_containers):
            raise ValueError(f"system {self.system}: no mutation to assert (set want_labels, want_annotations, "
                             "want_readiness_gates or want_containers)")
        return self


KOORDINATOR = MutationCase(
    system="koordinator",
    configuration="koordinator-mutating-webhook-configuration",
    pod_labels={"koordinator.sh/enable-colocation": "true"},
    want_labels={"koordinator.sh/qosClass": "BE"},
)
OPENKRUISE = MutationCase(
    system="openkruise",
    configuration="kruise-mutating-webhook-configuration",
    pod_labels={"apps.kruise.io/inject-readiness-gate": "true"},
    want_readiness_gates=["KruisePodReady"],
)


class AdmissionDryRunParams(Params):
    namespace: str = Field("outpost-probe", description="The probe's own namespace, the only one it may create "
                           "pods in (dry run only).")
    name_prefix: str = Field("outpost-dry-run-", description="generateName of the dry-run pods.")
    image: str = Field("registry.k8s.io/pause:3.10", description="Image of the dry-run pod (never pulled).")
    timeout_seconds: float = Field(
        30.0, gt=0, le=120,
        description="How long one dry-run create may take: every matching webhook may take its timeoutSeconds.")
    systems: list[MutationCase] = Field(default_factory=lambda: [KOORDINATOR, OPENKRUISE], min_length=1)


@dataclass(frozen=True)
class DryRunAnswer:
    case: MutationCase
    path: str
    status_code: int
    body: str
    elapsed_ms: int
    configuration: WebhookConfiguration | None


def probe_pod(params: AdmissionDryRunParams, case: MutationCase) -> dict[str, Any]:
    """The pod sent for `case`: small, never scheduled (dry run), no token mounted."""
    metadata: dict[str, Any] = {"generateName": params.name_prefix, "namespace": params.namespace,
                                "labels": {"app.kubernetes.io/managed-by": "outpost", **case.pod_labels}}
    if case.pod_annotations:
        metadata["annotations"] = dict(case.pod_annotations)
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": metadata,
        "spec": {
            "automountServiceAccountToken": False,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "probe", "image": params.image,
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
        },
    }


def fetch(cluster: Cluster, params: AdmissionDryRunParams) -> list[DryRunAnswer]:
    answers = []
    path = collection_path(PODS, params.namespace)
    for case in params.systems:
        raw = cluster.get_object(object_path(MUTATING_WEBHOOKS, case.configuration))
        configuration = None if raw is None else parse(WebhookConfiguration, raw,
                                                       ref(MUTATING_WEBHOOKS.kind, case.configuration))
        response = cluster.dry_run_create(path, probe_pod(params, case), timeout=params.timeout_seconds)
        answers.append(DryRunAnswer(case, path, response.status_code, response.text, response.elapsed_ms,
                                    configuration))
    return answers


def declared_access(params: AdmissionDryRunParams) -> list[access.Access]:
    """Each expected MutatingWebhookConfiguration by name, and `create pods` (always dryRun=All) in the
    probe's own namespace only."""
    needed: list[access.Access] = [access.get(MUTATING_WEBHOOKS, case.configuration) for case in params.systems]
    needed.append(access.create(PODS, params.namespace))
    return needed


def missing_mutation(case: MutationCase, pod: Pod) -> list[str]:
    """What `case` wants that the admitted pod lacks, one phrase each (`label koordinator.sh/qosClass absent`)."""
    missing = []
    for kind, have, want in (("label", pod.metadata.labels, case.want_labels),
                             ("annotation", pod.metadata.annotations, case.want_annotations)):
        for key, value in want.items():
            if key not in have:
                missing.append(f"{kind} {key} absent (want {value!r})")
            elif have[key] != value:
                missing.append(f"{kind} {key}={have[key]!r} (want {value!r})")
    gates = {gate.condition_type for gate in pod.spec.readiness_gates}
    missing += [f"readiness gate {gate} absent" for gate in case.want_readiness_gates if gate not in gates]
    containers = {c.name for c in pod.spec.containers}
    missing += [f"container {name} absent" for name in case.want_containers if name not in containers]
    return missing


def _pod_webhooks(configuration: WebhookConfiguration) -> list[Webhook]:
    """The configuration's webhooks that are called for a pod CREATE."""
    def matches(webhook: Webhook) -> bool:
        return any(({"pods", "*"} & set(rule.resources)) and ({"CREATE", "*"} & set(rule.operations))
                   and ({"", "*"} & set(rule.api_groups)) for rule in webhook.rules)
    return [w for w in configuration.webhooks if matches(w)]


def _who_should_mutate(case: MutationCase, configuration: WebhookConfiguration | None) -> str:
    what = ref(MUTATING_WEBHOOKS.kind, case.configuration)
    if configuration is None:
        return f"{what}: not found"
    webhooks = _pod_webhooks(configuration)
    if not webhooks:
        return f"{what}: no webhook for pod CREATE"
    named = ", ".join(f"{w.name} (failurePolicy {w.failure_policy})" for w in webhooks)
    return f"{what} webhook {named} did not mutate it"


def _status_message(body: str) -> str:
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        return " ".join(parsed["message"].split())[:_PREVIEW]
    flat = " ".join(body.split())
    return repr(flat[:_PREVIEW]) if flat else "empty body"


def judge(answer: DryRunAnswer, params: AdmissionDryRunParams) -> tuple[str | None, str | None, dict[str, Any]]:
    """(failure line, not-observed line, details) of one system's dry run; both None when it was mutated."""
    case = answer.case
    pod_ref = f"pod {params.namespace}/{params.name_prefix}* (dry run, {case.system})"
    details: dict[str, Any] = {"status_code": answer.status_code, "elapsed_ms": answer.elapsed_ms,
                               "configuration_found": answer.configuration is not None}
    code = answer.status_code
    if code in (200, 201):
        try:
            pod = parse(Pod, json.loads(answer.body), f"dry-run create {answer.path}")
        except ValueError:
            return None, f"{pod_ref}: HTTP {code} with a body that is not JSON, admission not observed", details
        except MalformedResponse as error:
            return None, f"{pod_ref}: HTTP {code}: {error}", details
        if pod.kind != "Pod" or not pod.metadata.name:
            return None, f"{pod_ref}: HTTP {code} without the admitted pod (kind {pod.kind!r})", details
        pod_ref = f"pod {params.namespace}/{pod.metadata.name} (dry run, {case.system})"
        missing = missing_mutation(case, pod)
        details.update(pod=pod.metadata.name, mutated=not missing, missing=missing,
                       labels=pod.metadata.labels,
                       readiness_gates=[g.condition_type for g in pod.spec.readiness_gates])
        if missing:
            return (f"{pod_ref}: admitted without mutation ({'; '.join(missing)}); "
                    f"{_who_should_mutate(case, answer.configuration)}"), None, details
        return None, None, details
    webhook = admission_webhook_named(answer.body)
    message = _status_message(answer.body)
    details.update(webhook=webhook, message=message)
    if webhook and code >= 400 and code != 429:
        return f"webhook {webhook} ({case.system}): refused the dry-run create of {pod_ref}: HTTP {code} ({message})", \
            None, details
    if 300 <= code < 400:
        return None, f"{pod_ref}: HTTP {code} redirect (not followed), admission not observed", details
    if code == 429:
        return None, f"{pod_ref}: HTTP 429 rate limited by the API server, admission not observed", details
    return None, f"{pod_ref}: HTTP {code} ({message}), admission not observed", details


def evaluate(data: list[DryRunAnswer], params: AdmissionDryRunParams, now: datetime) -> Result:
    failures: list[str] = []
    unobserved: list[str] = []
    details: dict[str, Any] = {"namespace": params.namespace, "systems": {}}
    for answer in data:
        failure, not_observed, system_details = judge(answer, params)
        details["systems"][answer.case.system] = system_details
        failures += [failure] if failure else []
        unobserved += [not_observed] if not_observed else []
    if unobserved:
        return Result(check=NAME, status=Status.ERROR, summary=unobserved[0], errors=unobserved + failures,
                      details=details)
    if failures:
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        return Result(check=NAME, status=Status.FAILED, summary=f"{failures[0]}{more}", errors=failures,
                      details=details)
    systems = ", ".join(answer.case.system for answer in data)
    return Result(check=NAME, status=Status.OK,
                  summary=f"dry-run pods admitted and mutated ({systems}); nothing stored", details=details)


CHECK = CheckSpec(
    name=NAME,
    system="koordinator / openkruise",
    layer="control plane",
    severity="critical",
    schedule_minutes=5,
    fails_when="a dry-run pod create is not mutated as the webhook should",
    params=AdmissionDryRunParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
)
