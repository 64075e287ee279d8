"""admission-dry-run: does each system's mutating webhook really mutate a pod the API server admits?

Why: no health endpoint shows that a pod webhook mutates; only an admission that really runs does. This check
creates one pod per configured system with `dryRun=All` through `Cluster.dry_run_create` (the seam cannot leave
`dryRun` out: the admission chain runs, nothing is stored), all systems at once, and asserts the mutation the
system's webhook must make. The pod webhooks' failurePolicy depends on the install: `Fail` in both releases'
config/ and in OpenKruise's chart (openkruise/charts versions/kruise/1.8.0/templates/webhookconfiguration.yaml),
`Ignore` by default in Koordinator's chart (koordinator-sh/charts versions/v1.6.0/values.yaml
`webhookConfiguration.failurePolicy.pods`). A broken `Fail` webhook refuses the pod, a broken `Ignore` one lets
it through unmutated; both are failures here.

Per system (parameter `systems`; defaults are upstream's, each configurable):
- OpenKruise: kruise-manager's pod webhook adds the readiness gate `KruisePodReady` only to a pod whose controller
  ownerReference has the API group apps.kruise.io (any kind or version), or to every pod with the alpha feature
  gate KruisePodReadinessGate, off by default (github.com/openkruise/kruise@v1.8.0,
  pkg/webhook/pod/mutating/pod_readiness.go, pkg/util/pods.go `IsPodOwnedByKruise`,
  pkg/features/kruise_features.go). So the dry-run pod names a controller owner (`pod_owner`, default CloneSet
  apps.kruise.io/v1alpha1 `outpost-dry-run` with a fixed uid). The owner need not exist, and only
  `blockOwnerDeletion` (not set) would need rights on it (k8s.io/kubernetes@v1.37.2,
  plugin/pkg/admission/gc/gc_admission.go).
- Koordinator: koord-manager mutates a pod only as the ClusterColocationProfiles that select it say; without one it
  changes nothing (`outpost.kube.colocation`). The check lists the profiles, reads the probe namespace's labels
  (for their namespaceSelector) and asserts what the profiles that certainly apply write: labels (qosClass and
  koordinatorPriority included), annotations, schedulerName and priorityClassName. The dry-run pod carries the
  label of upstream's documented profile `colocation-profile-example`, `koordinator.sh/enable-colocation=true`;
  that profile selects on the same label of the namespace. When no profile certainly applies (none exists, none
  selects, or only ones with probability below 100, which may skip the pod) the result is `error`: nothing in the
  cluster would mutate the pod, so the webhook is not observed. The line names the pod's and the namespace's labels
  and what each profile misses.
- A case may state the mutation itself instead (`want_labels`, `want_annotations`, `want_readiness_gates`,
  `want_containers`, `want_scheduler_name`, `want_priority_class_name`); with `colocation_profiles` they add to
  what the profiles say.

Hung webhooks: the API server ends a webhook call at the earliest of the webhook's `timeoutSeconds` (10 s when
unset, as in both config/; 30 s in both charts), the request's deadline, which the `timeout` query parameter sets
(k8s.io/apiserver@v0.37.2, pkg/endpoints/filters/request_deadline.go), and the create handler's own 34 s
(pkg/endpoints/handlers/create.go, `requestTimeoutUpperBound` in rest.go); the call's context derives from theirs
(pkg/admission/plugin/webhook/mutating/dispatcher.go). Only the webhook's own timeout names it: with failurePolicy
`Fail` the answer is 500 `failed calling webhook "NAME": ... context deadline exceeded`, with `Ignore` the pod is
admitted unmutated after that many seconds (the failure line says so). When the request's deadline comes first,
the create handler's finisher (pkg/endpoints/handlers/finisher/finisher.go) and the timeout filter
(pkg/server/filters/timeout.go), woken by the same context while the webhook call still unwinds, answer 504
`Timeout: request did not complete within requested timeout - context deadline exceeded` or `... within the
allotted timeout`, naming no webhook. So a `timeout` at or below a webhook's timeoutSeconds never gets it named:
the create is sent with `timeout=admission_timeout_seconds` (default 32 s: above both upstream timeoutSeconds,
below the handler's 34 s), shortened to what the run's deadline leaves, and the check waits `timeout_seconds` for
the answer. A 504 Timeout naming no webhook is `error`: every dry-run pod passes both systems' pod webhooks, so the
answer cannot say which system (or the API server itself) held it; the line lists the pod webhooks of the read
configurations with their timeoutSeconds. That is all a hung koord-manager installed from its chart ever shows:
its mutating and validating pod webhooks are both `Ignore` with 30 s, called one after the other, 60 s together,
past the handler's 34 s.

Verdicts:
- admitted and mutated as wanted = healthy for that system;
- admitted without (all of) the mutation = failed, naming what is missing, the profile that wanted it, and the
  configuration's pod webhooks that should have done it (or that the configuration is gone);
- refused by a webhook (denied, or failurePolicy `Fail` with the webhook down, timing out or untrusted: the API
  server's `Status` names it) = failed, naming the webhook and its configuration;
- admitted, but nothing would mutate the pod (no applying ClusterColocationProfile) = error, as above;
- our identity refused (401/403 from RBAC), rate limited (429), redirected, a 504 or any other refusal naming no
  webhook, a malformed answer, or no answer at all = error (not observed), never ok.

The probe identity may `create pods` only in its own namespace (`outpost.rbac`, default `outpost-probe`),
and only ever sends dry runs; the e2e tests list that namespace after a run to prove nothing was stored.
"""

from __future__ import annotations

import concurrent.futures
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field, model_validator

from outpost.checks.base import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.cluster.client import admission_webhook_named
from outpost.errors import ClusterResponseError, ClusterTimeout, MalformedResponse
from outpost.kube import (
    MUTATING_WEBHOOKS,
    NAMESPACES,
    PODS,
    KubeObject,
    Pod,
    WebhookConfiguration,
    access,
    collection_path,
    object_path,
    parse,
    ref,
)
from outpost.kube.colocation import (
    ANNOTATION,
    DOCUMENTED_SELECTOR,
    LABEL,
    PRIORITY_CLASS_NAME,
    SCHEDULER_NAME,
    ClusterColocationProfile,
    Want,
    expected_mutation,
)
from outpost.kube.objects import Webhook, parse_items
from outpost.kube.paths import CLUSTER_COLOCATION_PROFILES
from outpost.result import Result, Status

NAME = "admission-dry-run"
_PREVIEW = 200
READINESS_GATE = "readiness gate"
CONTAINER = "container"
STATED = "params"
"""The source of a want the case states itself."""
ANSWER_MARGIN_SECONDS = 2
"""Our wait beyond the API server's `timeout`: its answer must still reach us."""
CREATE_HANDLER_SECONDS = 34
"""The API server's create handler ends a create, admission included, after 34 s whatever `timeout` asks
(k8s.io/apiserver@v0.37.2, pkg/endpoints/handlers/rest.go `requestTimeoutUpperBound`)."""
OWNER_UID = "00000000-0000-4000-8000-6f7574706f73"
"""The dry-run pod's owner uid: fixed and well-formed (validation wants one), pointing at nothing."""


class PodOwner(Params):
    """The controller ownerReference the dry-run pod carries (controller: true, no blockOwnerDeletion)."""

    api_version: str = Field(min_length=1, description="e.g. apps.kruise.io/v1alpha1")
    kind: str = Field(min_length=1, description="e.g. CloneSet")
    name: str = Field(min_length=1)
    uid: str = Field(OWNER_UID, min_length=1)

    def reference(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
        }


class MutationCase(Params):
    """One system's promise: a pod shaped like this is admitted with these changes."""

    system: str = Field(description="Name used in messages, e.g. koordinator.")
    configuration: str = Field(description="The MutatingWebhookConfiguration expected to mutate the pod.")
    pod_labels: dict[str, str] = Field(default_factory=dict, description="Labels that make the webhook act.")
    pod_annotations: dict[str, str] = Field(default_factory=dict)
    pod_owner: PodOwner | None = Field(
        None,
        description="Controller ownerReference of the pod (OpenKruise "
        "mutates only pods controlled by an apps.kruise.io workload).",
    )
    colocation_profiles: bool = Field(
        False,
        description="Derive the wanted mutation from the cluster's "
        "ClusterColocationProfiles that select the pod (Koordinator).",
    )
    want_labels: dict[str, str] = Field(default_factory=dict, description="Labels the admitted pod must carry.")
    want_annotations: dict[str, str] = Field(default_factory=dict)
    want_readiness_gates: list[str] = Field(
        default_factory=list, description="Readiness gate condition types the pod must carry."
    )
    want_containers: list[str] = Field(
        default_factory=list, description="Container names the pod must carry (e.g. an injected sidecar)."
    )
    want_scheduler_name: str = ""
    want_priority_class_name: str = ""

    @model_validator(mode="after")
    def _wants_something(self) -> MutationCase:
        if not (self.colocation_profiles or self.stated_wants()):
            raise ValueError(
                f"system {self.system}: no mutation to assert (set colocation_profiles, want_labels, "
                "want_annotations, want_readiness_gates, want_containers, want_scheduler_name or "
                "want_priority_class_name)"
            )
        return self

    def stated_wants(self) -> list[Want]:
        wants = [Want(LABEL, k, frozenset([v]), (STATED,)) for k, v in self.want_labels.items()]
        wants += [Want(ANNOTATION, k, frozenset([v]), (STATED,)) for k, v in self.want_annotations.items()]
        wants += [
            Want(field, "", frozenset([value]), (STATED,))
            for field, value in (
                (SCHEDULER_NAME, self.want_scheduler_name),
                (PRIORITY_CLASS_NAME, self.want_priority_class_name),
            )
            if value
        ]
        wants += [Want(READINESS_GATE, gate, frozenset(), (STATED,)) for gate in self.want_readiness_gates]
        wants += [Want(CONTAINER, name, frozenset(), (STATED,)) for name in self.want_containers]
        return wants


KOORDINATOR = MutationCase(
    system="koordinator",
    configuration="koordinator-mutating-webhook-configuration",
    pod_labels=dict(DOCUMENTED_SELECTOR),
    colocation_profiles=True,
)
OPENKRUISE = MutationCase(
    system="openkruise",
    configuration="kruise-mutating-webhook-configuration",
    pod_owner=PodOwner(api_version="apps.kruise.io/v1alpha1", kind="CloneSet", name="outpost-dry-run"),
    want_readiness_gates=["KruisePodReady"],
)


class AdmissionDryRunParams(Params):
    namespace: str = Field(
        "outpost-probe", description="The probe's own namespace, the only one it may create pods in (dry run only)."
    )
    name_prefix: str = Field("outpost-dry-run-", description="generateName of the dry-run pods.")
    image: str = Field("registry.k8s.io/pause:3.10", description="Image of the dry-run pod (never pulled).")
    admission_timeout_seconds: int = Field(
        32,
        ge=1,
        le=CREATE_HANDLER_SECONDS,
        description="The create's `timeout`: the API server ends admission, every webhook call included, then. "
        "Above a hanging webhook's timeoutSeconds the API server names it; otherwise it answers 504 "
        "naming none. Shortened to what the run's deadline leaves; the create handler stops at 34 s "
        "whatever is asked.",
    )
    timeout_seconds: float = Field(
        35.0,
        gt=0,
        le=120,
        description="How long to wait for the API server's answer to one dry-run create: at least "
        f"admission_timeout_seconds + {ANSWER_MARGIN_SECONDS}.",
    )
    systems: list[MutationCase] = Field(
        default_factory=lambda: [KOORDINATOR, OPENKRUISE],
        min_length=1,
        description="One dry-run pod per system: the mutating configuration to name and the mutation it owes.",
    )

    @model_validator(mode="after")
    def _outwaits_the_api_server(self) -> AdmissionDryRunParams:
        if self.timeout_seconds < self.admission_timeout_seconds + ANSWER_MARGIN_SECONDS:
            raise ValueError(
                f"timeout_seconds ({self.timeout_seconds:g}) must be at least admission_timeout_seconds "
                f"({self.admission_timeout_seconds}) + {ANSWER_MARGIN_SECONDS}: the API server's answer "
                "naming a hanging webhook would arrive after we stopped waiting"
            )
        names = [case.system for case in self.systems]
        if len(set(names)) != len(names):
            raise ValueError(f"systems: each system name once (got {', '.join(names)})")
        return self


@dataclass(frozen=True)
class DryRunAnswer:
    case: MutationCase
    path: str
    status_code: int
    body: str
    elapsed_ms: int
    configuration: WebhookConfiguration | None
    admission_timeout_seconds: int
    """The `timeout` the create was sent with."""


@dataclass(frozen=True)
class ColocationState:
    """What koord-manager reads to decide: the profiles (None: the API server does not serve them) and the probe
    namespace's labels (None: the namespace does not exist)."""

    profiles: list[ClusterColocationProfile] | None
    namespace_labels: dict[str, str] | None


@dataclass(frozen=True)
class DryRuns:
    answers: list[DryRunAnswer]
    colocation: ColocationState | None = None
    """Read only when a case derives its wants from ClusterColocationProfiles."""


def sent_labels(case: MutationCase) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "outpost", **case.pod_labels}


def probe_pod(params: AdmissionDryRunParams, case: MutationCase) -> dict[str, Any]:
    """The pod sent for `case`: small, never scheduled (dry run), no token mounted."""
    metadata: dict[str, Any] = {
        "generateName": params.name_prefix,
        "namespace": params.namespace,
        "labels": sent_labels(case),
    }
    if case.pod_annotations:
        metadata["annotations"] = dict(case.pod_annotations)
    if case.pod_owner is not None:
        metadata["ownerReferences"] = [case.pod_owner.reference()]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "automountServiceAccountToken": False,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {"name": "probe", "image": params.image, "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
            ],
        },
    }


def admission_timeout(params: AdmissionDryRunParams, remaining_seconds: float) -> int:
    """The `timeout` to send: the configured one, shortened so the API server answers before the run's deadline."""
    seconds = min(params.admission_timeout_seconds, math.floor(remaining_seconds - ANSWER_MARGIN_SECONDS))
    if seconds < 1:
        raise ClusterTimeout(
            f"{NAME}: {remaining_seconds:.1f} s left of the run's deadline, too little for a "
            f"dry-run create (1 s for the API server + {ANSWER_MARGIN_SECONDS} s for its answer)"
        )
    return seconds


def _read_colocation(cluster: Cluster, namespace: str) -> ColocationState:
    path = collection_path(CLUSTER_COLOCATION_PROFILES)
    try:
        profiles: list[ClusterColocationProfile] | None = parse_items(
            ClusterColocationProfile, cluster.list(path), f"LIST {path}"
        )
    except ClusterResponseError as error:
        if error.status_code != 404:
            raise
        profiles = None  # the group is not served: Koordinator's CRDs are not installed
    raw = cluster.get_object(object_path(NAMESPACES, namespace))
    labels = None if raw is None else dict(parse(KubeObject, raw, ref("namespace", namespace)).metadata.labels)
    return ColocationState(profiles, labels)


def fetch(cluster: Cluster, params: AdmissionDryRunParams) -> DryRuns:
    configurations: dict[str, WebhookConfiguration | None] = {}
    for name in dict.fromkeys(case.configuration for case in params.systems):
        raw = cluster.get_object(object_path(MUTATING_WEBHOOKS, name))
        configurations[name] = (
            None if raw is None else parse(WebhookConfiguration, raw, ref(MUTATING_WEBHOOKS.kind, name))
        )
    colocation = None
    if any(case.colocation_profiles for case in params.systems):
        colocation = _read_colocation(cluster, params.namespace)
    path = collection_path(PODS, params.namespace)
    server_timeout = admission_timeout(params, cluster.deadline.remaining())

    def dry_run(case: MutationCase) -> DryRunAnswer:
        response = cluster.dry_run_create(
            path, probe_pod(params, case), timeout=params.timeout_seconds, server_timeout=server_timeout
        )
        return DryRunAnswer(
            case,
            path,
            response.status_code,
            response.text,
            response.elapsed_ms,
            configurations[case.configuration],
            server_timeout,
        )

    # At once: a hanging webhook holds every dry run (each pod passes both systems' pod webhooks), and one after
    # the other they would need a multiple of the deadline to be named.
    with concurrent.futures.ThreadPoolExecutor(
        max_workers=len(params.systems), thread_name_prefix="outpost-dry-run"
    ) as pool:
        answers = list(pool.map(dry_run, params.systems))
    return DryRuns(answers, colocation)


def declared_access(params: AdmissionDryRunParams) -> list[access.Access]:
    """Each expected MutatingWebhookConfiguration by name; the ClusterColocationProfiles and the probe namespace
    when a case derives its wants from them; `create pods` (always dryRun=All) in the probe's own namespace only."""
    needed: list[access.Access] = [
        access.get(MUTATING_WEBHOOKS, name) for name in dict.fromkeys(case.configuration for case in params.systems)
    ]
    if any(case.colocation_profiles for case in params.systems):
        needed += [access.list_(CLUSTER_COLOCATION_PROFILES), access.get(NAMESPACES, params.namespace)]
    needed.append(access.create(PODS, params.namespace))
    return needed


@dataclass(frozen=True)
class Expectation:
    """The wants of one case, or `problem`: why none can be derived (the webhook is then not observed)."""

    wants: tuple[Want, ...]
    problem: str = ""
    details: dict[str, Any] | None = None


def expectation(case: MutationCase, params: AdmissionDryRunParams, colocation: ColocationState | None) -> Expectation:
    stated = tuple(case.stated_wants())
    if not case.colocation_profiles:
        return Expectation(stated)
    if colocation is None:
        return Expectation(stated, "the ClusterColocationProfiles were not read")
    if colocation.profiles is None:
        return Expectation(
            stated,
            f"the API server does not serve {CLUSTER_COLOCATION_PROFILES.plural}."
            f"{CLUSTER_COLOCATION_PROFILES.group} (Koordinator's CRDs are not installed), "
            "so nothing would mutate the pod",
        )
    if colocation.namespace_labels is None:
        return Expectation(stated, f"namespace {params.namespace} not found")
    derived = expected_mutation(colocation.profiles, params.namespace, colocation.namespace_labels, sent_labels(case))
    details: dict[str, Any] = {
        "profiles": {s.profile: (f"selects ({s.chance}%)" if s.selects else s.why) for s in derived.selections},
        "unpredictable": list(derived.unpredictable),
    }
    return Expectation(stated + derived.wants, derived.problem, details)


def _actual(want: Want, pod: Pod) -> str | None:
    if want.field == LABEL:
        return pod.metadata.labels.get(want.key)
    if want.field == ANNOTATION:
        return pod.metadata.annotations.get(want.key)
    if want.field == SCHEDULER_NAME:
        return pod.spec.scheduler_name or None
    if want.field == PRIORITY_CLASS_NAME:
        return pod.spec.priority_class_name or None
    present = (
        {g.condition_type for g in pod.spec.readiness_gates}
        if want.field == READINESS_GATE
        else {c.name for c in pod.spec.containers}
    )
    return want.key if want.key in present else None


def _wanted(want: Want) -> str:
    values = sorted(want.values)
    wanted = repr(values[0]) if len(values) == 1 else "one of " + ", ".join(map(repr, values))
    sources = [s for s in want.sources if s != STATED]
    by = f", profile {', '.join(sources)}" if sources else ""
    return f" (want {wanted}{by})"


def missing_mutation(wants: Sequence[Want], pod: Pod) -> list[str]:
    """What the admitted pod lacks of `wants`, one phrase each (`label koordinator.sh/qosClass absent (want 'BE')`)."""
    missing = []
    for want in wants:
        have = _actual(want, pod)
        if not want.values:
            if have is None:
                missing.append(f"{want.what} absent")
        elif have is None:
            missing.append(f"{want.what} absent{_wanted(want)}")
        elif have not in want.values:
            missing.append(f"{want.what}={have!r}{_wanted(want)}")
    return missing


def _pod_webhooks(configuration: WebhookConfiguration) -> list[Webhook]:
    """The configuration's webhooks that are called for a pod CREATE."""

    def matches(webhook: Webhook) -> bool:
        return any(
            ({"pods", "*"} & set(rule.resources))
            and ({"CREATE", "*"} & set(rule.operations))
            and ({"", "*"} & set(rule.api_groups))
            for rule in webhook.rules
        )

    return [w for w in configuration.webhooks if matches(w)]


def _who_should_mutate(answer: DryRunAnswer) -> str:
    what = ref(MUTATING_WEBHOOKS.kind, answer.case.configuration)
    if answer.configuration is None:
        return f"{what}: not found"
    webhooks = _pod_webhooks(answer.configuration)
    if not webhooks:
        return f"{what}: no webhook for pod CREATE"
    elapsed = answer.elapsed_ms / 1000

    def described(webhook: Webhook) -> str:
        text = f"{webhook.name} (failurePolicy {webhook.failure_policy}, timeoutSeconds {webhook.timeout_seconds})"
        if webhook.failure_policy == "Ignore" and elapsed >= webhook.timeout_seconds:
            text += f": the answer took {elapsed:.1f} s, so it likely did not answer in time and was skipped"
        return text

    return f"{what} webhook {', '.join(described(w) for w in webhooks)} did not mutate it"


def _status(body: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser: not a Status
        return None
    return parsed if isinstance(parsed, dict) else None


def _status_message(body: str) -> str:
    parsed = _status(body)
    if parsed is not None and isinstance(parsed.get("message"), str):
        return " ".join(parsed["message"].split())[:_PREVIEW]
    flat = " ".join(body.split())
    return repr(flat[:_PREVIEW]) if flat else "empty body"


def _is_api_server_timeout(code: int, body: str) -> bool:
    """The API server's own 504 (its timeout filter writes the Status without kind/apiVersion)."""
    parsed = _status(body)
    return code == 504 and parsed is not None and parsed.get("reason") == "Timeout"


def _configuration_of(webhook: str, configurations: Sequence[WebhookConfiguration]) -> WebhookConfiguration | None:
    return next((c for c in configurations if any(w.name == webhook for w in c.webhooks)), None)


def _timeout_line(
    pod_ref: str, answer: DryRunAnswer, message: str, configurations: Sequence[WebhookConfiguration]
) -> str:
    sent = answer.admission_timeout_seconds
    hooks = [(c.metadata.name, w) for c in configurations for w in _pod_webhooks(c)]
    listed = (
        ", ".join(
            f"{name} {w.name} (timeoutSeconds {w.timeout_seconds}, failurePolicy {w.failure_policy})"
            for name, w in hooks
        )
        or "none"
    )
    reaching = [w.name for _, w in hooks if w.timeout_seconds >= sent]
    who = (
        f"{', '.join(reaching)} may wait that long alone"
        if reaching
        else f"none waits {sent} s alone: several adding up (an Ignore webhook, then the validating webhooks called "
        "after it), another configuration's webhook, or the API server itself"
    )
    return (
        f"{pod_ref}: HTTP 504 after {answer.elapsed_ms / 1000:.1f} s ({message}): the API server stopped at the "
        f"request's timeout={sent}s, before a webhook's own timeoutSeconds ran out, so it names none; admission "
        f"not observed; the pod webhooks this check reads: {listed}; {who}"
    )


def judge(
    answer: DryRunAnswer,
    params: AdmissionDryRunParams,
    colocation: ColocationState | None = None,
    configurations: Sequence[WebhookConfiguration] = (),
) -> tuple[str | None, str | None, dict[str, Any]]:
    """(failure line, not-observed line, details) of one system's dry run; both None when it was mutated."""
    case = answer.case
    pod_ref = f"pod {params.namespace}/{params.name_prefix}* (dry run, {case.system})"
    details: dict[str, Any] = {
        "status_code": answer.status_code,
        "elapsed_ms": answer.elapsed_ms,
        "admission_timeout_seconds": answer.admission_timeout_seconds,
        "configuration_found": answer.configuration is not None,
    }
    code = answer.status_code
    if code in (200, 201):
        try:
            pod = parse(Pod, json.loads(answer.body), f"dry-run create {answer.path}")
        except (ValueError, RecursionError):  # RecursionError: nested past the parser
            return None, f"{pod_ref}: HTTP {code} with a body that is not JSON, admission not observed", details
        except MalformedResponse as error:
            return None, f"{pod_ref}: HTTP {code}: {error}", details
        if pod.kind != "Pod" or not pod.metadata.name:
            return None, f"{pod_ref}: HTTP {code} without the admitted pod (kind {pod.kind!r})", details
        pod_ref = f"pod {params.namespace}/{pod.metadata.name} (dry run, {case.system})"
        expected = expectation(case, params, colocation)
        details.update(expected.details or {})
        details.update(
            pod=pod.metadata.name,
            labels=pod.metadata.labels,
            readiness_gates=[g.condition_type for g in pod.spec.readiness_gates],
            scheduler_name=pod.spec.scheduler_name,
            priority_class_name=pod.spec.priority_class_name,
        )
        if expected.problem:
            details.update(mutated=None, missing=[])
            return None, f"{pod_ref}: admitted, but {expected.problem}; admission not observed", details
        missing = missing_mutation(expected.wants, pod)
        details.update(mutated=not missing, missing=missing, expected=[w.what for w in expected.wants])
        if missing:
            return (
                f"{pod_ref}: admitted without mutation ({'; '.join(missing)}); {_who_should_mutate(answer)}",
                None,
                details,
            )
        return None, None, details
    webhook = admission_webhook_named(answer.body)
    message = _status_message(answer.body)
    details.update(webhook=webhook, message=message)
    if webhook and code >= 400 and code != 429:
        owner = _configuration_of(webhook, configurations)
        configuration = f"{ref(MUTATING_WEBHOOKS.kind, owner.metadata.name)} " if owner else ""
        return (
            f"{configuration}webhook {webhook} refused the dry-run create of {pod_ref}: HTTP {code} ({message})",
            None,
            details,
        )
    if _is_api_server_timeout(code, answer.body):
        return None, _timeout_line(pod_ref, answer, message, configurations), details
    if 300 <= code < 400:
        return None, f"{pod_ref}: HTTP {code} redirect (not followed), admission not observed", details
    if code == 429:
        return None, f"{pod_ref}: HTTP 429 rate limited by the API server, admission not observed", details
    return None, f"{pod_ref}: HTTP {code} ({message}), admission not observed", details


def evaluate(data: DryRuns, params: AdmissionDryRunParams, now: datetime) -> Result:
    failures: list[str] = []
    unobserved: list[str] = []
    configurations = list(
        {a.configuration.metadata.name: a.configuration for a in data.answers if a.configuration is not None}.values()
    )
    details: dict[str, Any] = {"namespace": params.namespace, "systems": {}}
    for answer in data.answers:
        failure, not_observed, system_details = judge(answer, params, data.colocation, configurations)
        details["systems"][answer.case.system] = system_details
        failures += [failure] if failure else []
        unobserved += [not_observed] if not_observed else []
    if unobserved:
        return Result(
            check=NAME, status=Status.ERROR, summary=unobserved[0], errors=unobserved + failures, details=details
        )
    if failures:
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        return Result.failed(NAME, f"{failures[0]}{more}", failures, details)
    systems = ", ".join(answer.case.system for answer in data.answers)
    return Result.ok(NAME, f"dry-run pods admitted and mutated ({systems}); nothing stored", details)


CHECK = CheckSpec(
    name=NAME,
    system="koordinator / openkruise",
    layer="control plane",
    severity="critical",
    schedule_minutes=1,
    fails_when="a dry-run pod (Koordinator: selected by a ClusterColocationProfile; OpenKruise: controlled by an "
    "apps.kruise.io workload) is refused by a pod webhook, or admitted without the mutation it owes",
    params=AdmissionDryRunParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
)
