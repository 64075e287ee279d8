"""outpost.kube.colocation: which ClusterColocationProfiles koord-manager applies to a new pod, and what the admitted
pod must then carry (github.com/koordinator-sh/koordinator@v1.6.0, pkg/webhook/pod/mutating/
cluster_colocation_profile.go). Profiles are JSON shaped as the API server lists them, starting from upstream's
documented sample (tests/unit/fixtures/admission_dry_run/clustercolocationprofiles.json)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from outpost.kube import parse
from outpost.kube.colocation import (
    ClusterColocationProfile,
    Want,
    chance_percent,
    expected_mutation,
    selector_verdict,
)

SAMPLE: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "admission_dry_run" / "clustercolocationprofiles.json").read_text()
)["items"][0]
NAMESPACE = {"kubernetes.io/metadata.name": "outpost-probe", "koordinator.sh/enable-colocation": "true"}
POD = {"app.kubernetes.io/managed-by": "outpost", "koordinator.sh/enable-colocation": "true"}


def profile(name: str = "colocation-profile-example", **spec: Any) -> ClusterColocationProfile:
    raw = copy.deepcopy(SAMPLE)
    raw["metadata"]["name"] = name
    for key, value in spec.items():
        if value is None:
            raw["spec"].pop(key, None)
        else:
            raw["spec"][key] = value
    return parse(ClusterColocationProfile, raw, "test")


def wants(
    *profiles: ClusterColocationProfile, namespace: dict[str, str] = NAMESPACE, pod: dict[str, str] = POD
) -> dict[str, tuple[list[str], tuple[str, ...]]]:
    expectation = expected_mutation(profiles, "outpost-probe", namespace, pod)
    assert not expectation.problem, expectation.problem
    return {w.what: (sorted(w.values), w.sources) for w in expectation.wants}


def problem(
    *profiles: ClusterColocationProfile, namespace: dict[str, str] = NAMESPACE, pod: dict[str, str] = POD
) -> str:
    expectation = expected_mutation(profiles, "outpost-probe", namespace, pod)
    assert not expectation.wants
    return expectation.problem


def test_the_documented_profile_wants_what_koord_manager_wrote_in_the_measurement() -> None:
    sample = ("colocation-profile-example",)
    assert wants(profile()) == {
        "annotation koordinator.sh/intercepted": (["true"], sample),
        "label koordinator.sh/mutated": (["true"], sample),
        "label koordinator.sh/priority": (["1000"], sample),
        "label koordinator.sh/qosClass": (["BE"], sample),
        "priorityClassName": (["koord-batch"], sample),
        "schedulerName": (["koord-scheduler"], sample),
    }


@pytest.mark.parametrize(
    ("raw", "labels", "selects", "unmet"),
    [
        (None, {}, True, ""),  # no selector: every pod
        ({}, {}, True, ""),  # empty selector: every pod
        ({"matchLabels": {"koordinator.sh/enable-colocation": "true"}}, POD, True, ""),
        (
            {"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
            {},
            False,
            "koordinator.sh/enable-colocation=true",
        ),
        # matchLabels alone are compared as they are, unvalidated (GetFastLabelSelector)
        ({"matchLabels": {"not a key!": "x y"}}, {"not a key!": "x y"}, True, ""),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["batch", "free"]}]},
            {"tier": "mid"},
            False,
            "tier in (batch,free)",
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {}, True, ""),
        # a selector that does not parse makes the handler keep the profile
        ({"matchExpressions": [{"key": "tier", "operator": "Near", "values": ["x"]}]}, {}, True, ""),
    ],
)
def test_selectors_decide_as_the_handler(
    raw: dict[str, Any] | None, labels: dict[str, str], selects: bool, unmet: str
) -> None:
    assert selector_verdict(raw, labels) == (selects, unmet)


@pytest.mark.parametrize(
    ("probability", "chance"),
    [
        (None, 100),
        (100, 100),
        (50, 50),
        (0, 0),
        (-5, -5),
        (150, 150),
        ("50%", 50),
        ("+5%", 5),
        ("100%", 100),
        ("50", None),
        ("5.5%", None),
        ("half", None),
        (" 5%", None),
    ],
)
def test_probability_is_read_as_get_scaled_value_from_int_or_percent(
    probability: int | str | None, chance: int | None
) -> None:
    assert chance_percent(probability) == chance


@pytest.mark.parametrize(
    ("profiles", "namespace", "pod", "says"),
    [
        (
            [],
            NAMESPACE,
            POD,
            [
                "no ClusterColocationProfile exists",
                "pod labels app.kubernetes.io/managed-by=outpost, "
                "koordinator.sh/enable-colocation=true in namespace outpost-probe",
            ],
        ),
        (
            [profile()],
            {"kubernetes.io/metadata.name": "outpost-probe"},
            POD,
            [
                "no ClusterColocationProfile selects the pod",
                "namespace labels kubernetes.io/metadata.name=outpost-probe",
                "colocation-profile-example: namespace outpost-probe lacks koordinator.sh/enable-colocation=true "
                "(its namespaceSelector)",
            ],
        ),
        (
            [profile()],
            NAMESPACE,
            {"app.kubernetes.io/managed-by": "outpost"},
            ["colocation-profile-example: the pod lacks koordinator.sh/enable-colocation=true (its selector)"],
        ),
        ([profile(probability=0)], NAMESPACE, POD, ["colocation-profile-example: probability 0, never applies"]),
        (
            [profile(probability="50%")],
            NAMESPACE,
            POD,
            ["only ClusterColocationProfile colocation-profile-example (50%) selects the pod, and may skip it"],
        ),
        (
            [profile(probability="half")],
            NAMESPACE,
            POD,
            ["colocation-profile-example (probability 'half')", "koord-manager fails on every pod it selects"],
        ),
        (
            [
                profile(
                    qosClass=None,
                    priorityClassName=None,
                    koordinatorPriority=None,
                    schedulerName=None,
                    labels=None,
                    annotations=None,
                )
            ],
            NAMESPACE,
            POD,
            ["selects the pod but sets nothing this check can predict"],
        ),
    ],
)
def test_no_predictable_mutation_says_why(
    profiles: list[ClusterColocationProfile], namespace: dict[str, str], pod: dict[str, str], says: list[str]
) -> None:
    text = problem(*profiles, namespace=namespace, pod=pod)
    for part in says:
        assert part in text


@pytest.mark.parametrize(
    ("profiles", "ends_with_remedy"),
    [
        ([], True),
        ([profile(namespaceSelector={"matchLabels": {"team": "a"}})], True),
        ([profile(probability=50)], False),
    ],
)
def test_the_callers_remedy_ends_the_problem_when_no_profile_selects_the_pod(
    profiles: list[ClusterColocationProfile], ends_with_remedy: bool
) -> None:
    expectation = expected_mutation(profiles, "outpost-probe", NAMESPACE, POD, remedy="apply profile p")
    assert expectation.problem.endswith("; apply profile p") is ends_with_remedy, expectation.problem


def test_profiles_applied_in_no_stable_order_allow_either_value_of_a_key_they_both_write() -> None:
    be, ls = profile("a-be"), profile("b-ls", qosClass="LS", priorityClassName="koord-prod")
    got = wants(be, ls)
    assert got["label koordinator.sh/qosClass"] == (["BE", "LS"], ("a-be", "b-ls"))
    assert got["priorityClassName"] == (["koord-batch", "koord-prod"], ("a-be", "b-ls"))


def test_a_profile_that_may_skip_widens_but_does_not_add_wants() -> None:
    certain = profile(
        "certain", labels=None, annotations=None, schedulerName=None, priorityClassName=None, koordinatorPriority=None
    )
    maybe = profile("maybe", probability="30%", qosClass="LS", labels={"only-maybe": "x"})
    assert wants(certain, maybe) == {"label koordinator.sh/qosClass": (["BE", "LS"], ("certain", "maybe"))}


@pytest.mark.parametrize(
    ("spec", "absent", "changed", "kept"),
    [
        # keys mappings copy whatever the pod carries at that moment
        (
            {"labelKeysMapping": {"koordinator.sh/enable-colocation": "koordinator.sh/mutated"}},
            "label koordinator.sh/mutated",
            {},
            "label koordinator.sh/qosClass",
        ),
        # the patch runs last: a plain string replaces the profile's value, anything else makes the key unpredictable
        (
            {"patch": {"spec": {"schedulerName": "other-scheduler"}}},
            "",
            {"schedulerName": ["other-scheduler"]},
            "priorityClassName",
        ),
        (
            {"patch": {"metadata": {"labels": {"koordinator.sh/qosClass": "LS"}}}},
            "",
            {"label koordinator.sh/qosClass": ["LS"]},
            "label koordinator.sh/priority",
        ),
        (
            {"patch": {"metadata": {"labels": {"koordinator.sh/mutated": None}}}},
            "label koordinator.sh/mutated",
            {},
            "label koordinator.sh/priority",
        ),
        (
            {"patch": {"metadata": {"labels": {"$patch": "replace", "a": "b"}}}},
            "label koordinator.sh/qosClass",
            {},
            "annotation koordinator.sh/intercepted",
        ),
        ({"patch": {"spec": {"$retainKeys": ["containers"]}}}, "schedulerName", {}, "label koordinator.sh/qosClass"),
    ],
)
def test_what_cannot_be_predicted_is_not_asserted(
    spec: dict[str, Any], absent: str, changed: dict[str, list[str]], kept: str
) -> None:
    got = wants(profile(**spec))
    if absent:
        assert absent not in got
        assert absent in " ".join(expected_mutation([profile(**spec)], "outpost-probe", NAMESPACE, POD).unpredictable)
    for what, values in changed.items():
        assert got[what][0] == values
    assert kept in got  # the rest is still asserted


def test_want_names_its_field_and_key() -> None:
    assert Want("label", "a", frozenset({"b"}), ("p",)).what == "label a"
    assert Want("schedulerName", "", frozenset({"s"}), ("p",)).what == "schedulerName"
