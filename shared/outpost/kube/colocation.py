"""Koordinator's ClusterColocationProfile, and what koord-manager's pod webhook writes from it into a new pod.

Pure. Predicts, from the profiles and the namespace's labels, the labels, annotations, `schedulerName` and
`priorityClassName` an admitted pod must carry, deciding selection, probability and write order as
koordinator@v1.6.0 `pkg/webhook/pod/mutating/cluster_colocation_profile.go` does; every value an applying
profile may leave is allowed, since profiles apply in no stable order. What is not predicted and why:
docs/contracts.md "Koordinator", Mutation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from outpost.kube.objects import KubeObject, View
from outpost.kube.selectors import LabelSelector

QOS_LABEL = "koordinator.sh/qosClass"
PRIORITY_LABEL = "koordinator.sh/priority"
SKIP_UPDATE_RESOURCES = "config.koordinator.sh/skip-update-resources"

LABEL = "label"
ANNOTATION = "annotation"
SCHEDULER_NAME = "schedulerName"
PRIORITY_CLASS_NAME = "priorityClassName"
_ALL = "*"
_PERCENT = re.compile(r"^[+-]?[0-9]+%$")


class ColocationProfileSpec(View):
    namespace_selector: dict[str, Any] | None = None
    selector: dict[str, Any] | None = None
    probability: int | str | None = None
    qos_class: str = ""
    priority_class_name: str = ""
    koordinator_priority: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    label_keys_mapping: dict[str, str] = Field(default_factory=dict)
    annotation_keys_mapping: dict[str, str] = Field(default_factory=dict)
    scheduler_name: str = ""
    patch: Any = None


class ClusterColocationProfile(KubeObject):
    """config.koordinator.sh/v1alpha1, cluster-scoped (`apis/config/v1alpha1/cluster_colocation_profile_types.go`)."""

    KIND: ClassVar[str] = "ClusterColocationProfile"

    spec: ColocationProfileSpec = Field(default_factory=ColocationProfileSpec)


@dataclass(frozen=True)
class Want:
    """One thing the admitted pod must carry: `field` (`label`, `annotation`, `schedulerName`, `priorityClassName`)
    and `key` (the label or annotation key; "" for the spec fields) with one of `values`, written by `sources`."""

    field: str
    key: str
    values: frozenset[str]
    sources: tuple[str, ...]

    @property
    def what(self) -> str:
        return f"{self.field} {self.key}" if self.key else self.field


@dataclass(frozen=True)
class Selection:
    """How one profile treats the pod: `selects`, and if not, `why` (the requirement that failed)."""

    profile: str
    selects: bool
    why: str = ""
    chance: int | None = 100
    """Percent chance it applies once selected; None when its probability does not parse."""


@dataclass(frozen=True)
class ProfileExpectation:
    """What koord-manager would write into the pod: `wants` (empty when `problem` says why nothing can be asserted)."""

    selections: tuple[Selection, ...]
    wants: tuple[Want, ...] = ()
    unpredictable: tuple[str, ...] = ()
    """Keys applying profiles write that cannot be predicted (`label x (labelKeysMapping of profile p)`)."""
    problem: str = ""

    @property
    def applying(self) -> list[Selection]:
        return [s for s in self.selections if s.selects and (s.chance is None or s.chance > 0)]


def chance_percent(probability: int | str | None) -> int | None:
    """The percent chance a selected profile applies, as `GetScaledValueFromIntOrPercent(p, 100, false)` reads it;
    None when it does not parse (koord-manager then errors on every pod the profile selects)."""
    if probability is None:
        return 100
    if isinstance(probability, int):
        return probability
    return int(probability[:-1]) if _PERCENT.match(probability) else None


def selector_verdict(raw: Mapping[str, Any] | None, labels: Mapping[str, str]) -> tuple[bool, str]:
    """(selects, the unmet requirements) of a profile selector over `labels`, as the handler decides."""
    if raw is None:
        return True, ""
    match_labels = raw.get("matchLabels") or {}
    expressions = raw.get("matchExpressions") or []
    if not expressions and isinstance(match_labels, Mapping) and match_labels:
        unmet = [f"{key}={value}" for key, value in match_labels.items() if labels.get(key) != str(value)]
        return not unmet, ", ".join(unmet)
    try:
        selector = LabelSelector.from_api(raw)
    except ValueError:
        return True, ""  # the handler's selector fails to parse and it keeps the profile
    unmet = [requirement.to_query() for requirement in selector.requirements if not requirement.matches(labels)]
    return not unmet, ", ".join(unmet)


def select(
    profile: ClusterColocationProfile,
    namespace: str,
    namespace_labels: Mapping[str, str],
    pod_labels: Mapping[str, str],
) -> Selection:
    name = profile.metadata.name
    selects, unmet = selector_verdict(profile.spec.namespace_selector, namespace_labels)
    if not selects:
        return Selection(name, False, f"namespace {namespace} lacks {unmet} (its namespaceSelector)")
    selects, unmet = selector_verdict(profile.spec.selector, pod_labels)
    if not selects:
        return Selection(name, False, f"the pod lacks {unmet} (its selector)")
    return Selection(name, True, chance=chance_percent(profile.spec.probability))


def _patch_writes(patch: Any) -> dict[tuple[str, str], str | None]:
    """What a profile's patch does to the predicted fields: a plain string value, or None (unpredictable);
    (`label`, `*`) stands for every label (likewise annotations)."""
    if patch is None:
        return {}
    everything: dict[tuple[str, str], str | None] = {(f, _ALL): None for f in (LABEL, ANNOTATION)}
    everything |= {(SCHEDULER_NAME, ""): None, (PRIORITY_CLASS_NAME, ""): None}
    if not isinstance(patch, dict) or any(key.startswith("$") for key in patch):
        return everything
    writes: dict[tuple[str, str], str | None] = {}
    if "metadata" in patch:
        metadata = patch["metadata"]
        if not isinstance(metadata, dict) or any(key.startswith("$") for key in metadata):
            writes |= {(f, _ALL): None for f in (LABEL, ANNOTATION)}
        else:
            for scope, kind in (("labels", LABEL), ("annotations", ANNOTATION)):
                if scope not in metadata:
                    continue
                values = metadata[scope]
                if not isinstance(values, dict) or any(key.startswith("$") for key in values):
                    writes[(kind, _ALL)] = None
                    continue
                writes |= {(kind, key): value if isinstance(value, str) else None for key, value in values.items()}
    if "spec" in patch:
        spec = patch["spec"]
        if not isinstance(spec, dict) or any(key.startswith("$") for key in spec):
            writes |= {(SCHEDULER_NAME, ""): None, (PRIORITY_CLASS_NAME, ""): None}
        else:
            for key in (SCHEDULER_NAME, PRIORITY_CLASS_NAME):
                if key in spec:
                    writes[(key, "")] = spec[key] if isinstance(spec[key], str) and spec[key] else None
    return writes


def profile_writes(spec: ColocationProfileSpec) -> tuple[dict[tuple[str, str], str | None], dict[tuple[str, str], str]]:
    """(writes, why unpredictable) of one profile: (field, key) -> the value it leaves, or None when unpredictable."""
    writes: dict[tuple[str, str], str | None] = {}
    why: dict[tuple[str, str], str] = {}
    writes |= {(LABEL, key): value for key, value in spec.labels.items()}
    writes |= {(ANNOTATION, key): value for key, value in spec.annotations.items()}
    for mapping, kind, name in (
        (spec.label_keys_mapping, LABEL, "labelKeysMapping"),
        (spec.annotation_keys_mapping, ANNOTATION, "annotationKeysMapping"),
    ):
        for target in mapping.values():
            writes[(kind, target)] = None
            why[(kind, target)] = name
    if spec.scheduler_name:
        writes[(SCHEDULER_NAME, "")] = spec.scheduler_name
    if spec.qos_class:
        writes[(LABEL, QOS_LABEL)] = spec.qos_class
    if spec.priority_class_name:
        writes[(PRIORITY_CLASS_NAME, "")] = spec.priority_class_name
    if spec.koordinator_priority is not None:
        writes[(LABEL, PRIORITY_LABEL)] = str(spec.koordinator_priority)
    for key, value in _patch_writes(spec.patch).items():
        writes[key] = value
        if value is None:
            why[key] = "patch"
    return writes, why


def expected_mutation(
    profiles: Sequence[ClusterColocationProfile],
    namespace: str,
    namespace_labels: Mapping[str, str],
    pod_labels: Mapping[str, str],
    remedy: str = "",
) -> ProfileExpectation:
    """What the admitted pod must carry, from the profiles koord-manager would apply to it (module docstring);
    `remedy` ends the problem when no profile selects the pod (the caller's way to make one that does)."""
    selections = tuple(select(p, namespace, namespace_labels, pod_labels) for p in profiles)
    by_name = {p.metadata.name: p for p in profiles}
    broken = [s for s in selections if s.selects and s.chance is None]
    if broken:
        return ProfileExpectation(selections, problem=_unreadable_probability_problem(broken, by_name))
    applying = [s for s in selections if s.selects and s.chance is not None and s.chance > 0]
    certain = [s for s in applying if s.chance is not None and s.chance >= 100]
    if not certain:
        if applying:
            return ProfileExpectation(selections, problem=_uncertain_problem(applying))
        return ProfileExpectation(
            selections, problem=no_profile_problem(selections, namespace, namespace_labels, pod_labels, remedy)
        )
    writes = {s.profile: profile_writes(by_name[s.profile].spec) for s in applying}
    certain_keys = sorted({key for s in certain for key in writes[s.profile][0] if key[1] != _ALL})
    wants: list[Want] = []
    unpredictable: list[str] = []
    for key in certain_keys:
        values: set[str] = set()
        sources: list[str] = []
        reason = ""
        for s in applying:
            profile_writes_, why = writes[s.profile]
            wildcard = (key[0], _ALL) in profile_writes_
            if key not in profile_writes_ and not wildcard:
                continue
            value = None if wildcard else profile_writes_[key]
            if value is None:
                reason = f"{why.get(key, 'patch')} of profile {s.profile}"
                break
            values.add(value)
            sources.append(s.profile)
        what = f"{key[0]} {key[1]}" if key[1] else key[0]
        if reason:
            unpredictable.append(f"{what} ({reason})")
        else:
            wants.append(Want(key[0], key[1], frozenset(values), tuple(sources)))
    if not wants:
        named = ", ".join(s.profile for s in certain)
        return ProfileExpectation(
            selections,
            unpredictable=tuple(unpredictable),
            problem=f"ClusterColocationProfile {named} selects the pod but sets nothing this "
            "check can predict (labels, annotations, qosClass, koordinatorPriority, "
            "schedulerName or priorityClassName)",
        )
    return ProfileExpectation(selections, tuple(wants), tuple(unpredictable))


def pairs(labels: Mapping[str, str]) -> str:
    """`a=b, c=d` (sorted), or `none`."""
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "none"


def no_profile_problem(
    selections: Sequence[Selection],
    namespace: str,
    namespace_labels: Mapping[str, str],
    pod_labels: Mapping[str, str],
    remedy: str = "",
) -> str:
    """Why no profile would mutate the pod: the pod's labels, the namespace's, what each profile misses, then
    `remedy` (after "; ")."""
    where = f"pod labels {pairs(pod_labels)} in namespace {namespace} (namespace labels {pairs(namespace_labels)})"
    fix = f"; {remedy}" if remedy else ""
    if not selections:
        return f"no ClusterColocationProfile exists, so koord-manager mutates nothing ({where}){fix}"
    reasons = "; ".join(
        f"{s.profile}: {s.why}" if not s.selects else f"{s.profile}: probability {s.chance}, never applies"
        for s in selections
    )
    return f"no ClusterColocationProfile selects the pod, so koord-manager mutates nothing ({where}): {reasons}{fix}"


def _unreadable_probability_problem(
    broken: Sequence[Selection], by_name: Mapping[str, ClusterColocationProfile]
) -> str:
    """Why profiles that select the pod with a probability koord-manager cannot read leave nothing predictable."""
    named = ", ".join(f"{s.profile} (probability {by_name[s.profile].spec.probability!r})" for s in broken)
    return (
        f"ClusterColocationProfile {named} selects the pod with a probability that is neither an integer nor a "
        "percentage: koord-manager fails on every pod it selects, so no mutation can be predicted"
    )


def _uncertain_problem(applying: Sequence[Selection]) -> str:
    """Why profiles that select the pod below probability 100, and none at 100, leave the mutation unpredictable."""
    named = ", ".join(f"{s.profile} ({s.chance}%)" for s in applying)
    return (
        f"only ClusterColocationProfile {named} selects the pod, and may skip it: the mutation is not predictable "
        "(a profile applied at probability 100 is needed)"
    )
