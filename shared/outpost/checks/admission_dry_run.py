"""admission-dry-run: does each system's mutating webhook really mutate a pod the API server admits?

No health endpoint shows that a pod webhook mutates; only a real admission does. So the check creates one pod per
configured system with `dryRun=All` (`Cluster.dry_run_create` cannot leave it out: nothing is stored), all at
once, and asserts the mutation the system's webhook owes. A broken `Fail` webhook (both config/, OpenKruise's
chart) refuses the pod, a broken `Ignore` one (Koordinator's chart, `webhookConfiguration.failurePolicy.pods`)
admits it unmutated; both are failures here.

Per system (`systems`; upstream's defaults):
- OpenKruise: kruise-manager adds the readiness gate `KruisePodReady` only to a pod whose controller owner is in
  apps.kruise.io (github.com/openkruise/kruise@v1.8.0 `pkg/webhook/pod/mutating/pod_readiness.go`,
  `pkg/util/pods.go` IsPodOwnedByKruise; the KruisePodReadinessGate gate is off by default), so the pod names one
  (`pod_owner`, default CloneSet `outpost-dry-run`); it need not exist, as `blockOwnerDeletion` is not set;
- Koordinator: koord-manager mutates only as the ClusterColocationProfiles selecting the pod say
  (`outpost.kube.colocation`), and neither its chart nor config/ ships one. So the check ships its own
  (`probe_profile`, printed by `outpost rbac`): `outpost-probe-dry-run` selects only this check's dry-run pods, by
  the probe namespace's `kubernetes.io/metadata.name` label (set to the name by the API server on every namespace,
  k8s.io/kubernetes@v1.37.2 `pkg/registry/core/namespace/strategy.go` Canonicalize) and the pod label
  `outpost.dev/probe=admission-dry-run`, which only this check's pods carry. The check still reads every profile
  and asserts what those that certainly apply write, so another profile selecting the pod adds to the wants. If
  none certainly applies (the profile not applied or deleted, none selecting, or only ones with probability below
  100) it is `error`: nothing would mutate the pod, so the webhook is not observed; the line names the labels,
  what each profile misses, and the profile to apply;
- a case may state the mutation itself (`want_labels`, `want_annotations`, `want_readiness_gates`,
  `want_containers`, `want_scheduler_name`, `want_priority_class_name`), added to the profiles' with
  `colocation_profiles`.

Hung webhooks (k8s.io/apiserver@v0.37.2; docs/contracts.md "Kubernetes API server"): only a webhook's own
`timeoutSeconds` running out names it (Fail: 500 `failed calling webhook "NAME"`; Ignore: admitted unmutated). If
the request's `timeout` runs out first the answer is a 504 naming no webhook, and the create handler stops every
create at 34 s. So the create is sent with `timeout=admission_timeout_seconds` (default 32 s: above both
upstreams' timeoutSeconds, below 34 s), shortened to what the deadline leaves. A 504 naming no webhook is `error`,
listing the pod webhooks with their timeouts: it cannot say which system held it (a hung chart-installed
koord-manager always ends so: two `Ignore` 30 s webhooks in a row pass 34 s).

Verdicts: admitted and mutated = healthy; admitted without (all of) the mutation = failed, naming what is missing,
the profile that wanted it and the webhooks that should have done it; refused by a webhook (the `Status` names it)
= failed; nothing would mutate the pod = error; our identity refused, 429, a redirect, a 504 or other refusal
naming no webhook, a malformed or missing answer = error, never ok. The probe may `create pods` only in its own
namespace (default `outpost-probe`), dry runs only; the e2e tests prove nothing is stored.
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

from outpost.check import CheckSpec, Params
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
    LABEL,
    PRIORITY_CLASS_NAME,
    SCHEDULER_NAME,
    ClusterColocationProfile,
    Want,
    expected_mutation,
)
from outpost.kube.objects import Webhook, parse_items
from outpost.kube.paths import CLUSTER_COLOCATION_PROFILES
from outpost.result import Finding, Result
from outpost.runbook import Runbook

NAME = "admission-dry-run"
FAILS_WHEN = (
    "a dry-run pod (Koordinator: selected by a ClusterColocationProfile; OpenKruise: controlled by an "
    "apps.kruise.io workload) is refused by a pod webhook, or admitted without the mutation it owes"
)
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
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""Set to the namespace's own name on every namespace by the API server, whatever is asked (k8s.io/kubernetes@v1.37.2
`pkg/registry/core/namespace/strategy.go` Canonicalize): a selector on it matches that one namespace."""
PROBE_LABEL = "outpost.dev/probe"
"""Carried, with the value NAME, by the dry-run pod of every case that derives its wants from the profiles, and
by no other pod: what Outpost's own ClusterColocationProfile selects."""
PROFILE_NAME = "outpost-probe-dry-run"
"""Outpost's own ClusterColocationProfile (`probe_profile`)."""
PROFILE_QOS = "LS"
"""The qosClass the profile writes. With no priority, LS defaults to prod (github.com/koordinator-sh/koordinator@v1.6.0
`apis/extension/priority_utils.go` GetPodPriorityClassWithDefault), whose requests koord-manager leaves as sent
(`pkg/webhook/pod/mutating/cluster_colocation_profile.go` mutatePodResourceSpec; BE would move them to batch
resources); and no rule of the pod validating webhook objects to it (`pkg/webhook/pod/validating/
cluster_colocation_profile.go` forbids BE with no or a prod priority and LSR with no, mid, batch or free one,
a verdict `validating_handler.go` discards anyway)."""
MUTATED_BY = "outpost.dev/mutated-by"
"""The label and annotation the profile writes, its name as the value."""

# The failure classes, over the names a line gives: the probe's `{namespace}` and the system's mutating
# `{configuration}`. A line naming no configuration points at every webhook the API server may call for a pod.
ADMISSION_PAGE = "https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/"
EVERY_WEBHOOK = (
    "kubectl get mutatingwebhookconfigurations,validatingwebhookconfigurations -o 'custom-columns=NAME:.metadata.name,"
    "WEBHOOKS:.webhooks[*].name,POLICY:.webhooks[*].failurePolicy,TIMEOUT:.webhooks[*].timeoutSeconds,"
    "SERVICE:.webhooks[*].clientConfig.service.name'"
)
NOT_MUTATED = Runbook(
    "not-mutated",
    "A system's pod webhook admitted the dry-run pod without the mutation it owes",
    "the webhook server is down, hanging or not ready while its failurePolicy is Ignore (Koordinator's chart "
    "default for pods), so the API server admits the pod unmutated; or the configuration's namespaceSelector, "
    "objectSelector or rules no longer select pods of this namespace; OpenKruise mutates only pods controlled by "
    "an apps.kruise.io workload",
    "kubectl get mutatingwebhookconfiguration {configuration} -o yaml",
    ADMISSION_PAGE,
)
CONFIGURATION_MISSING = Runbook(
    "configuration-missing",
    "A system's MutatingWebhookConfiguration does not exist, so nothing mutates the pod",
    "deleted by hand or by a partial uninstall or upgrade of the chart; koord-manager and kruise-manager only "
    "patch the caBundle of configurations the chart created and do not recreate one",
    "kubectl get mutatingwebhookconfigurations",
    ADMISSION_PAGE,
)
REFUSED = Runbook(
    "refused",
    "A system's pod webhook refused the dry-run pod",
    "failurePolicy Fail with the webhook server down, hanging past its timeoutSeconds, or serving a certificate "
    "its caBundle does not trust; or the webhook denied the pod itself (koord-manager: a PriorityClass its "
    "ClusterColocationProfile names does not exist)",
    "kubectl get mutatingwebhookconfiguration {configuration} -o yaml",
    ADMISSION_PAGE,
)
REFUSED_BY_OTHER = Runbook(
    "refused-by-other-webhook",
    "A webhook outside the systems' mutating configurations refused the dry-run pod",
    "a validating webhook (the systems' own or another policy engine's) denied the pod, or is down with "
    "failurePolicy Fail; the line names the webhook",
    EVERY_WEBHOOK,
    ADMISSION_PAGE,
)
NO_PROFILE = Runbook(
    "no-profile-applies",
    "No ClusterColocationProfile certainly applies to the dry-run pod, so koord-manager's webhook is not observed",
    f"the ClusterColocationProfile {PROFILE_NAME} that `outpost rbac` prints with the probe's grants was not "
    "applied, was deleted, or was generated for another namespace than the check's (it selects the probe "
    f"namespace by name and pods labelled {PROBE_LABEL}={NAME}); or only profiles with probability below 100 "
    "select the pod. Koordinator's chart and config/ ship no profile: apply `outpost rbac --env ENV`'s output",
    f"kubectl get clustercolocationprofile {PROFILE_NAME} -o yaml && kubectl get namespace {{namespace}} --show-labels",
    "docs/rbac.md",
)
PROFILES_NOT_SERVED = Runbook(
    "profiles-not-served",
    "The API server does not serve ClusterColocationProfiles",
    "Koordinator's CRDs are not installed (or were removed by an uninstall), so koord-manager mutates nothing",
    "kubectl api-resources --api-group=config.koordinator.sh",
    "https://koordinator.sh/docs/installation/",
)
NAMESPACE_MISSING = Runbook(
    "namespace-missing",
    "The probe's namespace does not exist",
    "the namespace the probe creates its dry-run pods in (`namespace`) was deleted or never created; "
    "`outpost rbac` prints it with the probe's Role",
    "kubectl get namespaces --show-labels",
    "docs/rbac.md",
)
TIMEOUT_UNNAMED = Runbook(
    "timeout-unnamed",
    "The API server timed out the dry-run create without naming a webhook",
    "a pod webhook hangs and the calls add up past the request's timeout (koord-manager from its chart: its "
    "mutating and validating pod webhooks, Ignore and 30 s each, called one after the other), or the API server "
    "itself is slow; the line lists the pod webhooks and their timeoutSeconds",
    EVERY_WEBHOOK,
    ADMISSION_PAGE,
)
NOT_OBSERVED = Runbook(
    "admission-not-observed",
    "The answer to the dry-run create says nothing about admission",
    "a proxy or gateway in front of the API server answered (a redirect, an error page), the API server rate-limited "
    "the probe identity (429: its FlowSchema and priority level), or it answered something that is not a pod",
    "kubectl get flowschemas -o wide",
    "docs/reliability.md",
)

RUNBOOKS = (
    NOT_MUTATED,
    CONFIGURATION_MISSING,
    REFUSED,
    REFUSED_BY_OTHER,
    NO_PROFILE,
    PROFILES_NOT_SERVED,
    NAMESPACE_MISSING,
    TIMEOUT_UNNAMED,
    NOT_OBSERVED,
)


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
    """The dry-run pod's labels: the case's, and `PROBE_LABEL` (last, so no case can drop it) where the wants come
    from the profiles."""
    probe = {PROBE_LABEL: NAME} if case.colocation_profiles else {}
    return {"app.kubernetes.io/managed-by": "outpost", **case.pod_labels, **probe}


def probe_profile(params: AdmissionDryRunParams) -> dict[str, Any]:
    """Outpost's own ClusterColocationProfile (config.koordinator.sh/v1alpha1; github.com/koordinator-sh/
    koordinator@v1.6.0 `apis/config/v1alpha1/cluster_colocation_profile_types.go`), for `outpost rbac` to print.

    It selects only this check's dry-run pods: the probe namespace by its `kubernetes.io/metadata.name` label AND
    the pod label `PROBE_LABEL`=NAME (both selectors must match: `pkg/webhook/pod/mutating/
    cluster_colocation_profile.go` clusterColocationProfileMutatingPod). What it asks koord-manager to write into
    the pod, in doMutateByColocationProfile's order, is seen in the dry-run answer and touches nothing else (a
    dry run stores nothing):
    - `labels` and `annotations`: `MUTATED_BY` = its name, copied into the pod's labels and annotations;
    - `qosClass` LS: the label `koordinator.sh/qosClass=LS` (`PROFILE_QOS` says why LS);
    and, on purpose, nothing else: no `priorityClassName` (the webhook GETs the PriorityClass and refuses the pod
    when it is missing, and sets the priority), no `koordinatorPriority` or `schedulerName` (they would only name
    a priority and a scheduler the pod never reaches), no `patch` (partly unpredictable), no `probability` (absent
    is 100: it always applies, `shouldSkipProfile`). The check derives its wants from the profile as read from
    the cluster, like any other (`outpost.kube.colocation`), never from this function.
    """
    return {
        "apiVersion": f"{CLUSTER_COLOCATION_PROFILES.group}/{CLUSTER_COLOCATION_PROFILES.version}",
        "kind": CLUSTER_COLOCATION_PROFILES.kind,
        "metadata": {
            "name": PROFILE_NAME,
            "labels": {"app.kubernetes.io/part-of": "outpost"},
            "annotations": {
                "outpost.dev/description": (
                    f"Selects only admission-dry-run's dry-run pods (namespace {params.namespace}, label "
                    f"{PROBE_LABEL}={NAME}), so that koord-manager's pod webhook has a mutation to show. "
                    "Generated by `outpost rbac`."
                )
            },
        },
        "spec": {
            "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: params.namespace}},
            "selector": {"matchLabels": {PROBE_LABEL: NAME}},
            "qosClass": PROFILE_QOS,
            "labels": {MUTATED_BY: PROFILE_NAME},
            "annotations": {MUTATED_BY: PROFILE_NAME},
        },
    }


def shipped(params: AdmissionDryRunParams) -> list[dict[str, Any]]:
    """What `outpost rbac` prints for this check beyond grants: the profile, when a case derives its wants from
    the profiles."""
    return [probe_profile(params)] if any(case.colocation_profiles for case in params.systems) else []


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
    """The wants of one case, or `problem`: why none can be derived (the webhook is then not observed), of the
    class `problem_class`."""

    wants: tuple[Want, ...]
    problem: str = ""
    details: dict[str, Any] | None = None
    problem_class: Runbook = NO_PROFILE


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
            problem_class=PROFILES_NOT_SERVED,
        )
    if colocation.namespace_labels is None:
        return Expectation(stated, f"namespace {params.namespace} not found", problem_class=NAMESPACE_MISSING)
    remedy = (
        f"apply the ClusterColocationProfile {PROFILE_NAME} that `outpost rbac` prints for namespace "
        f"{params.namespace} (Koordinator ships none)"
    )
    derived = expected_mutation(
        colocation.profiles, params.namespace, colocation.namespace_labels, sent_labels(case), remedy
    )
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
) -> tuple[Finding | None, Finding | None, dict[str, Any]]:
    """(failure line, not-observed line, details) of one system's dry run, each with its next step; both None when
    it was mutated."""
    failure, not_observed, details = _judge(answer, params, colocation, configurations)
    names = {"namespace": params.namespace, "configuration": answer.case.configuration}
    owner = _configuration_of(details.get("webhook") or "", configurations)
    if failure is not None and failure[0] is REFUSED and owner is not None:
        # Every dry-run pod passes both systems' pod webhooks: a refusal names the configuration of the webhook
        # that refused, which may be the other system's.
        names["configuration"] = owner.metadata.name
    return (
        None if failure is None else failure[0].at(failure[1], **names),
        None if not_observed is None else not_observed[0].at(not_observed[1], **names),
        details,
    )


def _judge(
    answer: DryRunAnswer,
    params: AdmissionDryRunParams,
    colocation: ColocationState | None,
    configurations: Sequence[WebhookConfiguration],
) -> tuple[tuple[Runbook, str] | None, tuple[Runbook, str] | None, dict[str, Any]]:
    """`judge`'s lines as (class, line)."""
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
            return (
                None,
                (NOT_OBSERVED, f"{pod_ref}: HTTP {code} with a body that is not JSON, admission not observed"),
                details,
            )
        except MalformedResponse as error:
            return None, (NOT_OBSERVED, f"{pod_ref}: HTTP {code}: {error}"), details
        if pod.kind != "Pod" or not pod.metadata.name:
            return None, (NOT_OBSERVED, f"{pod_ref}: HTTP {code} without the admitted pod (kind {pod.kind!r})"), details
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
            line = f"{pod_ref}: admitted, but {expected.problem}; admission not observed"
            return None, (expected.problem_class, line), details
        missing = missing_mutation(expected.wants, pod)
        details.update(mutated=not missing, missing=missing, expected=[w.what for w in expected.wants])
        if missing:
            line = f"{pod_ref}: admitted without mutation ({'; '.join(missing)}); {_who_should_mutate(answer)}"
            return (NOT_MUTATED if answer.configuration else CONFIGURATION_MISSING, line), None, details
        return None, None, details
    webhook = admission_webhook_named(answer.body)
    message = _status_message(answer.body)
    details.update(webhook=webhook, message=message)
    if webhook and code >= 400 and code != 429:
        owner = _configuration_of(webhook, configurations)
        configuration = f"{ref(MUTATING_WEBHOOKS.kind, owner.metadata.name)} " if owner else ""
        line = f"{configuration}webhook {webhook} refused the dry-run create of {pod_ref}: HTTP {code} ({message})"
        return (REFUSED if owner else REFUSED_BY_OTHER, line), None, details
    if _is_api_server_timeout(code, answer.body):
        return None, (TIMEOUT_UNNAMED, _timeout_line(pod_ref, answer, message, configurations)), details
    if 300 <= code < 400:
        return None, (NOT_OBSERVED, f"{pod_ref}: HTTP {code} redirect (not followed), admission not observed"), details
    if code == 429:
        return (
            None,
            (NOT_OBSERVED, f"{pod_ref}: HTTP 429 rate limited by the API server, admission not observed"),
            details,
        )
    return None, (NOT_OBSERVED, f"{pod_ref}: HTTP {code} ({message}), admission not observed"), details


def evaluate(data: DryRuns, params: AdmissionDryRunParams, now: datetime) -> Result:
    failures: list[Finding] = []
    unobserved: list[Finding] = []
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
        return Result.unobserved(NAME, unobserved[0].line, unobserved + failures, details)
    if failures:
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        return Result.failed(NAME, f"{failures[0].line}{more}", failures, details)
    systems = ", ".join(answer.case.system for answer in data.answers)
    return Result.ok(NAME, f"dry-run pods admitted and mutated ({systems}); nothing stored", details)


CHECK = CheckSpec(
    name=NAME,
    system="koordinator / openkruise",
    layer="control plane",
    severity="critical",
    schedule_minutes=1,
    fails_when=FAILS_WHEN,
    params=AdmissionDryRunParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
    ships=shipped,
)
