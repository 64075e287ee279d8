"""admission-dry-run: `evaluate` over the API server's answers to a dry-run create, `fetch` over the fake API
server, and `Cluster.dry_run_create` (always dryRun=All, `timeout` sent, webhook 403 returned, RBAC 403 raised).

Fixtures (tests/unit/fixtures/admission_dry_run) are API server answers captured from upstream (v1.37.2, koord-
manager v1.6.0 under upstream's documented profile `koordinator-admitted*.json`, OpenKruise's readinessGates), both
systems' webhook configurations from config/ and the charts, and Status bodies as k8s.io/apiserver@v0.37.2 writes
them (a webhook's own timeout, the two racing 504s, a koord-manager refusal); the real managers' answers are judged
by the e2e tests. Hand-built: `namespace.outpost-probe.json` (the namespace `outpost rbac` creates, with the name
label the API server adds) and `koordinator-admitted-outpost-profile.json` (the captured admitted pod with the
documented profile's writes taken out and Outpost's profile's put in, as `doMutateByColocationProfile` writes them:
labels, annotations, qosClass; no capture exists yet, the e2e tests judge the real answer). The profiles are
Outpost's own, as `probe_profile` (what `outpost rbac` prints) builds it.
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest

from kit import NOW, FakeApiServer
from kit.fake_cluster import failure
from kit.webhook_fixtures import STATES, answer, objects
from outpost.checks import admission_dry_run
from outpost.checks.admission_dry_run import (
    KOORDINATOR,
    OPENKRUISE,
    OWNER_UID,
    PROBE_LABEL,
    PROFILE_NAME,
    AdmissionDryRunParams,
    ColocationState,
    DryRunAnswer,
    DryRuns,
    MutationCase,
    admission_timeout,
    evaluate,
    fetch,
    probe_pod,
    probe_profile,
    sent_labels,
)
from outpost.cluster import Cluster, Deadline
from outpost.config import Settings, environment_file
from outpost.errors import ClusterAuthError, ClusterTimeout
from outpost.kube import WebhookConfiguration, parse, parse_list
from outpost.kube.colocation import ClusterColocationProfile, select
from outpost.result import Result, Status
from outpost.settings import load_settings
from outpost.tooling import rbac

FIXTURES = Path(__file__).parent / "fixtures" / "admission_dry_run"
PARAMS = AdmissionDryRunParams()
PODS = "/api/v1/namespaces/outpost-probe/pods"
NAMESPACE: dict[str, Any] = json.loads((FIXTURES / "namespace.outpost-probe.json").read_text())
OUTPOST_PROFILE: dict[str, Any] = probe_profile(PARAMS)
PROFILES = [parse(ClusterColocationProfile, OUTPOST_PROFILE, "outpost rbac")]
COLOCATION = ColocationState(PROFILES, NAMESPACE["metadata"]["labels"])
DOCUMENTED = parse_list(
    ClusterColocationProfile, json.loads((FIXTURES / "clustercolocationprofiles.json").read_text()), "fixture"
)
"""Upstream's documented colocation-profile-example (koordinator-sh/website docs/user-manuals/colocation-profile.md),
which selects koordinator.sh/enable-colocation=true on both the namespace and the pod."""
SENT = 32


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def configuration(install: str, name: str) -> WebhookConfiguration:
    return parse(WebhookConfiguration, json.loads(text(f"configurations/{install}/{name}.json")), "fixture")


def dry_run(
    case: MutationCase, code: int, body: str, install: str = "kustomize", elapsed_ms: int = 40, sent: int = SENT
) -> DryRunAnswer:
    return DryRunAnswer(case, PODS, code, body, elapsed_ms, configuration(install, case.configuration), sent)


def without_readiness_gates(body: str) -> str:
    pod = json.loads(body)
    del pod["spec"]["readinessGates"]
    return json.dumps(pod)


def unmutated_koordinator_pod() -> str:
    """What the API server answers when koord-manager's webhook did not run (failurePolicy Ignore): the pod as
    sent, defaulted (the sandbox's capture with the stand-in webhook broken)."""
    return answer("webhook-no-mutate@koord-webhook", "dry_run.koordinator")[1]


def run(
    koordinator: DryRunAnswer,
    openkruise: DryRunAnswer,
    colocation: ColocationState | None = COLOCATION,
    params: AdmissionDryRunParams = PARAMS,
) -> Result:
    return evaluate(DryRuns([koordinator, openkruise], colocation), params, NOW)


KOORD_OK = text("koordinator-admitted-outpost-profile.json")
UNDER_DOCUMENTED = text("koordinator-admitted.json")
KRUISE_OK = text("openkruise-admitted.json")


@pytest.mark.parametrize("install", ["kustomize", "chart"])
def test_both_upstream_webhooks_mutating_under_outposts_own_profile_is_ok(install: str) -> None:
    result = run(dry_run(KOORDINATOR, 201, KOORD_OK, install), dry_run(OPENKRUISE, 201, KRUISE_OK, install))
    assert result.status is Status.OK, result.errors
    assert result.summary == "dry-run pods admitted and mutated (koordinator, openkruise); nothing stored"
    koordinator = result.details["systems"]["koordinator"]
    assert koordinator["mutated"] is True
    assert koordinator["profiles"] == {PROFILE_NAME: "selects (100%)"}
    assert koordinator["expected"] == [
        "annotation outpost.dev/mutated-by",
        "label koordinator.sh/qosClass",
        "label outpost.dev/mutated-by",
    ]
    assert result.details["systems"]["openkruise"]["readiness_gates"] == ["KruisePodReady"]


@pytest.mark.parametrize("koordinator_body", ["koordinator-admitted.json", "koordinator-admitted-1cpu.json"])
def test_a_profile_of_the_users_own_is_read_the_same_way(koordinator_body: str) -> None:
    """Wants come from whatever profiles the cluster holds: upstream's documented one, its namespace labelled and
    the case sending its label, alone (the captured answers of koord-manager v1.6.0 under it)."""
    case = KOORDINATOR.model_copy(update={"pod_labels": {"koordinator.sh/enable-colocation": "true"}})
    labelled = {**NAMESPACE["metadata"]["labels"], "koordinator.sh/enable-colocation": "true"}
    result = run(
        dry_run(case, 201, text(koordinator_body)),
        dry_run(OPENKRUISE, 201, KRUISE_OK),
        ColocationState(DOCUMENTED, labelled),
    )
    assert result.status is Status.OK, result.errors
    koordinator = result.details["systems"]["koordinator"]
    assert koordinator["profiles"] == {"colocation-profile-example": "selects (100%)"}
    assert koordinator["expected"] == [
        "annotation koordinator.sh/intercepted",
        "label koordinator.sh/mutated",
        "label koordinator.sh/priority",
        "label koordinator.sh/qosClass",
        "priorityClassName",
        "schedulerName",
    ]


TIMEOUT_FILTER = text("status/timeout-filter.504.json")
FINISHER_TIMEOUT = text("status/finisher-timeout.504.json")
KRUISE_OWN_TIMEOUT = text("status/mpod.kb.io-own-timeout.500.json")
KOORD_DENIED = text("status/mpod-create.koordinator.sh-denied.500.json")
KOORD_FAIL_DOWN = answer("backend-down@koord-webhook+failurePolicy=Fail", "dry_run.koordinator")[1]
KRUISE_CONFIG = "mutatingwebhookconfiguration kruise-mutating-webhook-configuration"
KOORD_CONFIG = "mutatingwebhookconfiguration koordinator-mutating-webhook-configuration"
KOORD_POD = "pod outpost-probe/outpost-dry-run-* (dry run, koordinator)"
KRUISE_POD = "pod outpost-probe/outpost-dry-run-* (dry run, openkruise)"
KOORD_REFUSED = f"{KOORD_CONFIG} webhook mpod-create.koordinator.sh refused the dry-run create of {KOORD_POD}: HTTP 500"


def koordinator_refused(body: str, reason: str) -> tuple[DryRunAnswer, DryRunAnswer, Status, list[str], list[str]]:
    """A row of the table below: the API server answers koordinator's dry run 500 with `body` (koord-manager's
    webhook refused it), openkruise's is admitted and mutated; the one line names the webhook and `reason`."""
    return (
        dry_run(KOORDINATOR, 500, body),
        dry_run(OPENKRUISE, 201, KRUISE_OK),
        Status.FAILED,
        ["refused"],
        [f"{KOORD_REFUSED} ({reason}"],
    )


@pytest.mark.parametrize(
    ("koordinator", "openkruise", "status", "failures", "lines"),
    [
        # Koordinator's chart (Ignore, 30 s) with its webhook hanging: admitted unmutated after 30 s, named
        (
            dry_run(KOORDINATOR, 201, unmutated_koordinator_pod(), "chart", elapsed_ms=30_180),
            dry_run(OPENKRUISE, 201, KRUISE_OK, "chart", elapsed_ms=30_190),
            Status.FAILED,
            ["not-mutated"],
            [
                "(dry run, koordinator): admitted without mutation (annotation outpost.dev/mutated-by absent (want "
                "'outpost-probe-dry-run', profile outpost-probe-dry-run); label koordinator.sh/qosClass absent (want "
                "'LS', profile outpost-probe-dry-run); label outpost.dev/mutated-by absent (want "
                "'outpost-probe-dry-run', profile outpost-probe-dry-run)); "
                f"{KOORD_CONFIG} webhook mpod-create.koordinator.sh (failurePolicy Ignore, "
                "timeoutSeconds 30): the answer took 30.2 s, so it likely did not answer in time and was skipped"
            ],
        ),
        # kruise-manager up but not injecting (e.g. the pod's owner is no apps.kruise.io workload)
        (
            dry_run(KOORDINATOR, 201, KOORD_OK),
            dry_run(OPENKRUISE, 201, without_readiness_gates(KRUISE_OK)),
            Status.FAILED,
            ["not-mutated"],
            [
                "(dry run, openkruise): admitted without mutation (readiness gate KruisePodReady absent); "
                f"{KRUISE_CONFIG} webhook mpod.kb.io (failurePolicy Fail, timeoutSeconds 10) did not mutate it"
            ],
        ),
        # config/ (Fail, 10 s) with kruise-manager hanging: the API server names it for both pods (both pass it)
        (
            dry_run(KOORDINATOR, 500, KRUISE_OWN_TIMEOUT, elapsed_ms=10_020),
            dry_run(OPENKRUISE, 500, KRUISE_OWN_TIMEOUT, elapsed_ms=10_030),
            Status.FAILED,
            ["refused", "refused"],
            [
                f"{KRUISE_CONFIG} webhook mpod.kb.io refused the dry-run create of {KOORD_POD}: HTTP 500 (Internal "
                f"error "
                'occurred: failed calling webhook "mpod.kb.io": failed to call webhook: Post "https://kruise-webhook-service.'
                "kruise-system.svc:443/mutate-pod",  # the result redacts query strings
                f"{KRUISE_CONFIG} webhook mpod.kb.io refused the dry-run create of {KRUISE_POD}: HTTP 500",
            ],
        ),
        # Fail and the webhook unreachable (the sandbox's capture)
        koordinator_refused(
            KOORD_FAIL_DOWN, 'Internal error occurred: failed calling webhook "mpod-create.koordinator.sh"'
        ),
        # koord-manager answering, refusing (a profile of the user's names a PriorityClass that is gone)
        koordinator_refused(
            KOORD_DENIED,
            'admission webhook "mpod-create.koordinator.sh" denied the request: priorityclasses.scheduling.k8s.io '
            '"koord-batch" not found)',
        ),
        # the charts (30 s) under a deadline that leaves 27 s: the API server's own deadline comes first, names nobody
        (
            dry_run(KOORDINATOR, 504, TIMEOUT_FILTER, "chart", elapsed_ms=27_004, sent=27),
            dry_run(OPENKRUISE, 504, TIMEOUT_FILTER, "chart", elapsed_ms=27_006, sent=27),
            Status.ERROR,
            ["timeout-unnamed", "timeout-unnamed"],
            [
                f"{KOORD_POD}: HTTP 504 after 27.0 s (Timeout: request did not complete within the allotted timeout): "
                f"the API "
                "server stopped at the request's timeout=27s, before a webhook's own timeoutSeconds ran out, so it "
                "names "
                "none; admission not observed; the pod webhooks this check reads: "
                "koordinator-mutating-webhook-configuration "
                "mpod-create.koordinator.sh (timeoutSeconds 30, failurePolicy Ignore), "
                "kruise-mutating-webhook-configuration "
                "mpod.kb.io (timeoutSeconds 30, failurePolicy Fail); mpod-create.koordinator.sh, mpod.kb.io may wait "
                "that "
                "long alone",
                f"{KRUISE_POD}: HTTP 504 after 27.0 s",
            ],
        ),
        # koord-manager from its chart hung: its mutating then its validating webhook (both Ignore, 30 s) outlast 32 s
        (
            dry_run(KOORDINATOR, 504, FINISHER_TIMEOUT, "chart", elapsed_ms=32_001),
            dry_run(OPENKRUISE, 504, TIMEOUT_FILTER, "chart", elapsed_ms=32_002),
            Status.ERROR,
            ["timeout-unnamed", "timeout-unnamed"],
            [
                f"{KOORD_POD}: HTTP 504 after 32.0 s (Timeout: request did not complete within requested timeout - "
                f"context "
                "deadline exceeded): the API server stopped at the request's timeout=32s",
                f"{KRUISE_POD}: HTTP 504 after 32.0 s (Timeout: request did not complete within the allotted timeout): "
                f"the API "
                "server stopped at the request's timeout=32s, before a webhook's own timeoutSeconds ran out, so it "
                "names "
                "none; admission not observed; the pod webhooks this check reads: "
                "koordinator-mutating-webhook-configuration "
                "mpod-create.koordinator.sh (timeoutSeconds 30, failurePolicy Ignore), "
                "kruise-mutating-webhook-configuration "
                "mpod.kb.io (timeoutSeconds 30, failurePolicy Fail); none waits 32 s alone: several adding up (an "
                "Ignore "
                "webhook, then the validating webhooks called after it), another configuration's webhook, or the API "
                "server "
                "itself",
            ],
        ),
        # a 504 that is no API server Status (a gateway in front of it)
        (
            dry_run(KOORDINATOR, 504, "<html>gateway timeout</html>"),
            dry_run(OPENKRUISE, 201, KRUISE_OK),
            Status.ERROR,
            ["admission-not-observed"],
            [f"{KOORD_POD}: HTTP 504 ('<html>gateway timeout</html>'), admission not observed"],
        ),
        # one system unobserved makes the run an error and keeps the other's verdict
        (
            dry_run(KOORDINATOR, 429, json.dumps({"kind": "Status", "message": "Too many requests", "code": 429})),
            dry_run(OPENKRUISE, 201, without_readiness_gates(KRUISE_OK)),
            Status.ERROR,
            ["admission-not-observed", "not-mutated"],
            [
                f"{KOORD_POD}: HTTP 429 rate limited by the API server, admission not observed",
                "(dry run, openkruise): admitted without mutation (readiness gate KruisePodReady absent)",
            ],
        ),
    ],
)
def test_refusals_timeouts_and_missing_mutations(
    koordinator: DryRunAnswer, openkruise: DryRunAnswer, status: Status, failures: list[str], lines: list[str]
) -> None:
    result = run(koordinator, openkruise)
    assert result.status is status, result.errors
    assert len(result.errors) == len(lines), result.errors
    for line, error in zip(lines, result.errors, strict=True):
        assert line in error, error
    assert [step.failure for step in result.next_steps] == failures
    for line, step in zip(result.errors, result.next_steps, strict=True):
        if step.failure in ("not-mutated", "refused"):  # the configuration the line names, by name
            configuration = line.split("mutatingwebhookconfiguration ")[1].split()[0].rstrip(":")
            assert step.command == f"kubectl get mutatingwebhookconfiguration {configuration} -o yaml"
        elif step.failure == "timeout-unnamed":  # every pod webhook with its timeoutSeconds
            assert "TIMEOUT:.webhooks[*].timeoutSeconds" in step.command


def test_a_hung_ignore_webhook_is_not_blamed_before_its_timeout() -> None:
    result = run(
        dry_run(KOORDINATOR, 201, unmutated_koordinator_pod(), "chart", elapsed_ms=400),
        dry_run(OPENKRUISE, 201, KRUISE_OK, "chart"),
    )
    assert result.status is Status.FAILED
    assert result.errors[0].endswith(
        "mpod-create.koordinator.sh (failurePolicy Ignore, timeoutSeconds 30) did not mutate it"
    )


@pytest.mark.parametrize(
    ("colocation", "says", "failure"),
    [
        # Outpost's profile deleted (or never applied): fails closed, naming the profile to apply
        (
            ColocationState([], COLOCATION.namespace_labels),
            "admitted, but no ClusterColocationProfile exists, so koord-manager mutates nothing (pod labels "
            "app.kubernetes.io/managed-by=outpost, outpost.dev/probe=admission-dry-run in namespace outpost-probe "
            "(namespace labels app.kubernetes.io/part-of=outpost, kubernetes.io/metadata.name=outpost-probe)); "
            "apply the ClusterColocationProfile outpost-probe-dry-run that `outpost rbac` prints for namespace "
            "outpost-probe (Koordinator ships none); admission not observed",
            "no-profile-applies",
        ),
        # only upstream's documented profile, the namespace not labelled for it (a stock install before this fix)
        (
            ColocationState(DOCUMENTED, COLOCATION.namespace_labels),
            "colocation-profile-example: namespace outpost-probe lacks koordinator.sh/enable-colocation=true (its "
            "namespaceSelector); apply the ClusterColocationProfile outpost-probe-dry-run",
            "no-profile-applies",
        ),
        # Outpost's profile generated for another namespace than the check's
        (
            ColocationState(
                [parse(ClusterColocationProfile, probe_profile(AdmissionDryRunParams(namespace="ops")), "test")],
                COLOCATION.namespace_labels,
            ),
            "outpost-probe-dry-run: namespace outpost-probe lacks kubernetes.io/metadata.name=ops (its "
            "namespaceSelector)",
            "no-profile-applies",
        ),
        (
            ColocationState(None, COLOCATION.namespace_labels),
            "the API server does not serve clustercolocationprofiles.config.koordinator.sh (Koordinator's CRDs are not "
            "installed), so nothing would mutate the pod",
            "profiles-not-served",
        ),
        (ColocationState(PROFILES, None), "namespace outpost-probe not found", "namespace-missing"),
    ],
)
def test_without_a_profile_that_applies_the_webhook_is_not_observed(
    colocation: ColocationState, says: str, failure: str
) -> None:
    result = run(
        dry_run(KOORDINATOR, 201, unmutated_koordinator_pod()), dry_run(OPENKRUISE, 201, KRUISE_OK), colocation
    )
    assert result.status is Status.ERROR
    assert result.errors == [result.summary]
    assert says in result.errors[0]
    (step,) = result.next_steps
    assert step.failure == failure
    assert result.details["systems"]["koordinator"]["mutated"] is None


def test_a_refusal_is_judged_even_when_no_profile_would_apply() -> None:
    result = run(
        dry_run(KOORDINATOR, 500, KOORD_FAIL_DOWN), dry_run(OPENKRUISE, 201, KRUISE_OK), ColocationState([], {})
    )
    assert result.status is Status.FAILED
    assert "webhook mpod-create.koordinator.sh refused" in result.errors[0]


def test_stated_wants_replace_the_profiles_or_add_to_them() -> None:
    stated = MutationCase(
        system="koordinator",
        configuration="koordinator-mutating-webhook-configuration",
        pod_labels={"koordinator.sh/enable-colocation": "true"},
        want_labels={"team": "batch"},
        want_scheduler_name="koord-scheduler",
    )
    # an answer with schedulerName koord-scheduler (koord-manager under upstream's documented profile)
    both = stated.model_copy(update={"colocation_profiles": True})
    for case, found in ((stated, "label team absent (want 'batch')"), (both, "label team absent")):
        result = run(dry_run(case, 201, UNDER_DOCUMENTED), dry_run(OPENKRUISE, 201, KRUISE_OK))
        assert result.status is Status.FAILED
        assert found in result.errors[0]
        assert "profile" not in result.errors[0].split("; ")[0]  # the stated want names no profile
    assert (
        run(
            dry_run(stated.model_copy(update={"want_labels": {}}), 201, UNDER_DOCUMENTED),
            dry_run(OPENKRUISE, 201, KRUISE_OK),
            None,
        ).status
        is Status.OK
    )


def test_a_sidecar_style_expectation_names_the_missing_container() -> None:
    case = MutationCase(
        system="openkruise",
        configuration="kruise-mutating-webhook-configuration",
        pod_labels={"app": "with-sidecar"},
        want_containers=["sidecar"],
    )
    result = evaluate(DryRuns([dry_run(case, 201, KRUISE_OK)]), PARAMS, NOW)
    assert result.status is Status.FAILED
    assert "container sidecar absent" in result.errors[0]


@pytest.mark.parametrize(
    ("code", "body", "line"),
    [
        (
            400,
            json.dumps(
                {"kind": "Status", "message": 'admission webhook "mpod.kb.io" does not support dry run', "code": 400}
            ),
            "webhook mpod.kb.io refused the dry-run create",
        ),
        (
            404,
            json.dumps(
                {"kind": "Status", "message": 'namespaces "outpost-probe" not found', "reason": "NotFound", "code": 404}
            ),
            'HTTP 404 (namespaces "outpost-probe" not found), admission not observed',
        ),
        (302, "", "HTTP 302 redirect (not followed)"),
        (500, "<html>bad gateway</html>", "HTTP 500 ('<html>bad gateway</html>'), admission not observed"),
        (201, "<html>ok</html>", "HTTP 201 with a body that is not JSON"),
        (201, json.dumps({"kind": "Status"}), "HTTP 201 without the admitted pod"),
        (201, json.dumps({"kind": "Pod", "metadata": {"name": "p", "labels": "BE"}}), "field metadata.labels"),
    ],
)
def test_answers_that_name_no_webhook_are_not_a_verdict(code: int, body: str, line: str) -> None:
    result = run(dry_run(KOORDINATOR, code, body), dry_run(OPENKRUISE, 201, KRUISE_OK))
    assert result.status is (Status.FAILED if "refused" in line else Status.ERROR)
    assert line in result.errors[0], result.errors
    assert result.next_steps[0].failure == ("refused" if "refused" in line else "admission-not-observed")


# -- the sandbox's captured webhook states (stand-in webhooks behind the real API server) ----------------------

STAND_IN_PROFILE = parse(
    ClusterColocationProfile,
    {
        "metadata": {"name": "qos-only"},
        "spec": {"selector": {"matchLabels": {PROBE_LABEL: "admission-dry-run"}}, "qosClass": "BE"},
    },
    "test",
)


def captured(state: str) -> list[DryRunAnswer]:
    configurations = {o["metadata"]["name"]: o for o in objects(state) if o["kind"] == "MutatingWebhookConfiguration"}
    answers = []
    for case in PARAMS.systems:
        status, body = answer(state, f"dry_run.{case.system}")
        raw = configurations.get(case.configuration)
        answers.append(
            DryRunAnswer(
                case,
                PODS,
                int(status),
                body,
                12,
                None if raw is None else parse(WebhookConfiguration, raw, "fixture"),
                SENT,
            )
        )
    return answers


def captured_expectation(state: str) -> tuple[Status, str]:
    """The stand-ins' pod webhooks are Ignore (5 s) unless the state says Fail: a broken one leaves its pod
    unmutated."""
    if state == "healthy":
        return Status.OK, ""
    if state.endswith("+failurePolicy=Fail"):
        return (
            Status.FAILED,
            f'{KOORD_REFUSED} (Internal error occurred: failed calling webhook "mpod-create.koordinator.sh"',
        )
    if state == "webhook-config-deleted@koordinator":
        return Status.FAILED, (
            "(dry run, koordinator): admitted without mutation (label koordinator.sh/qosClass "
            f"absent (want 'BE', profile qos-only)); {KOORD_CONFIG}: not found"
        )
    if state == "webhook-config-deleted@kruise":
        return Status.FAILED, (
            "(dry run, openkruise): admitted without mutation (readiness gate KruisePodReady "
            f"absent); {KRUISE_CONFIG}: not found"
        )
    if state.endswith("@koord-webhook"):
        return Status.FAILED, (
            "(dry run, koordinator): admitted without mutation (label koordinator.sh/qosClass "
            f"absent (want 'BE', profile qos-only)); {KOORD_CONFIG} webhook "
            "mpod-create.koordinator.sh (failurePolicy Ignore, timeoutSeconds 5)"
        )
    return Status.FAILED, (
        "(dry run, openkruise): admitted without mutation (readiness gate KruisePodReady absent); "
        f"{KRUISE_CONFIG} webhook mpod.kb.io (failurePolicy Ignore, timeoutSeconds 5)"
    )


@pytest.mark.parametrize("state", STATES)
def test_captured_sandbox_states(state: str) -> None:
    status, line = captured_expectation(state)
    result = evaluate(DryRuns(captured(state), ColocationState([STAND_IN_PROFILE], {})), PARAMS, NOW)
    assert result.status is status, result.errors
    if status is Status.OK:
        assert {s: d["mutated"] for s, d in result.details["systems"].items()} == {
            "koordinator": True,
            "openkruise": True,
        }
    else:
        assert len(result.errors) == 1  # only the broken system is named
        assert line in result.errors[0]
        (step,) = result.next_steps
        if "config-deleted" in state:
            assert (step.failure, step.command) == (
                "configuration-missing",
                "kubectl get mutatingwebhookconfigurations",
            )
        else:
            configuration = line.split("mutatingwebhookconfiguration ")[1].split()[0].rstrip(":")
            assert step.failure == ("refused" if "failurePolicy=Fail" in state else "not-mutated")
            assert step.command == f"kubectl get mutatingwebhookconfiguration {configuration} -o yaml"


# -- params, the pod sent, fetch ----------------------------------------------------------------------------------


def test_a_case_must_assert_some_mutation() -> None:
    with pytest.raises(ValueError, match="no mutation to assert"):
        MutationCase(system="x", configuration="y", pod_labels={"a": "b"})


@pytest.mark.parametrize(
    ("params", "error"),
    [
        (
            {"admission_timeout_seconds": 34, "timeout_seconds": 35},
            r"timeout_seconds \(35\) must be at least "
            r"admission_timeout_seconds \(34\) \+ 2",
        ),
        (
            {"admission_timeout_seconds": 35, "timeout_seconds": 90},
            "less than or equal to 34",
        ),  # the create handler's cap
        ({"systems": [OPENKRUISE.model_dump(), OPENKRUISE.model_dump()]}, "each system name once"),
    ],
)
def test_params_refuse_what_cannot_work(params: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        AdmissionDryRunParams.model_validate(params)


def test_the_koordinator_pod_carries_the_probe_label_and_mounts_no_token() -> None:
    pod = probe_pod(PARAMS, KOORDINATOR)
    assert pod["metadata"] == {
        "generateName": "outpost-dry-run-",
        "namespace": "outpost-probe",
        "labels": {"app.kubernetes.io/managed-by": "outpost", "outpost.dev/probe": "admission-dry-run"},
    }
    dropping = KOORDINATOR.model_copy(update={"pod_labels": {PROBE_LABEL: "mine", "team": "a"}})
    assert probe_pod(PARAMS, dropping)["metadata"]["labels"][PROBE_LABEL] == "admission-dry-run"
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert [c["name"] for c in pod["spec"]["containers"]] == ["probe"]


def test_the_openkruise_pod_is_controlled_by_a_clone_set_without_blocking_its_deletion() -> None:
    pod = probe_pod(PARAMS, OPENKRUISE)
    assert pod["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "outpost"}
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "CloneSet",
            "name": "outpost-dry-run",
            "uid": OWNER_UID,
            "controller": True,
        }
    ]


@pytest.mark.parametrize(("remaining", "sent"), [(45.0, 32), (30.0, 28), (29.5, 27), (3.5, 1)])
def test_the_timeout_sent_leaves_the_api_server_time_to_answer_within_the_deadline(remaining: float, sent: int) -> None:
    assert admission_timeout(PARAMS, remaining) == sent


def test_too_little_time_left_is_not_observed() -> None:
    with pytest.raises(ClusterTimeout, match=r"2\.9 s left of the run's deadline"):
        admission_timeout(PARAMS, 2.9)


class UpstreamApi:
    """The fake API server holding upstream's objects; each dry run is answered by the pod it carries (the fake
    itself refuses writes), and the pods sent are kept."""

    def __init__(self, koordinator: tuple[int, str], openkruise: tuple[int, str]) -> None:
        self.api = FakeApiServer().add(
            NAMESPACE,
            OUTPOST_PROFILE,
            *(json.loads(text(f"configurations/kustomize/{c.configuration}.json")) for c in PARAMS.systems),
        )
        self.answers = {"koordinator": koordinator, "openkruise": openkruise}
        self.posted: list[dict[str, Any]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        recorded = self.api.handler(request)
        if request.method != "POST":
            return recorded
        pod = json.loads(request.content)
        self.posted.append(pod)
        code, body = self.answers["openkruise" if "ownerReferences" in pod["metadata"] else "koordinator"]
        return httpx.Response(
            code, headers={"Content-Type": "application/json"}, stream=httpx.ByteStream(body.encode())
        )

    def cluster(self) -> Cluster:
        return Cluster(
            "fake",
            "https://fake.invalid",
            verify=ssl.create_default_context(),
            transport=httpx.MockTransport(self.handler),
            deadline=Deadline(60),
        )


def test_fetch_reads_the_profiles_and_namespace_and_sends_both_dry_runs_with_the_timeout() -> None:
    upstream = UpstreamApi((201, KOORD_OK), (201, KRUISE_OK))
    with upstream.cluster() as cluster:
        result = evaluate(fetch(cluster, PARAMS), PARAMS, NOW)
    api, posted = upstream.api, upstream.posted
    assert result.status is Status.OK, result.errors
    reads = sorted((r.method, r.path) for r in api.requests if r.method == "GET")
    assert reads == [
        ("GET", "/api/v1/namespaces/outpost-probe"),
        (
            "GET",
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
            "koordinator-mutating-webhook-configuration",
        ),
        (
            "GET",
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kruise-mutating-webhook-configuration",
        ),
        ("GET", "/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles"),
    ]
    writes = [(r.method, r.path, r.query) for r in api.requests if r.method != "GET"]
    assert writes == [("POST", PODS, (("dryRun", "All"), ("timeout", "32s")))] * 2
    assert sorted(p["metadata"].get("ownerReferences", [{}])[0].get("kind", "") for p in posted) == ["", "CloneSet"]


def test_fetch_without_the_profiles_api_reports_it() -> None:
    upstream = UpstreamApi((201, unmutated_koordinator_pod()), (201, KRUISE_OK))
    upstream.api.respond(
        "/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles",
        404,
        {
            "kind": "Status",
            "status": "Failure",
            "message": "the server could not find the requested resource",
            "reason": "NotFound",
            "code": 404,
        },
    )
    with upstream.cluster() as cluster:
        result = evaluate(fetch(cluster, PARAMS), PARAMS, NOW)
    assert result.status is Status.ERROR
    assert "does not serve clustercolocationprofiles.config.koordinator.sh" in result.errors[0]


# -- Outpost's own profile (`outpost rbac`) ----------------------------------------------------------------------


def as_created(namespace: dict[str, Any]) -> dict[str, Any]:
    """A Namespace as the API server stores it: labelled kubernetes.io/metadata.name=<its name> whatever was sent
    (k8s.io/kubernetes@v1.37.2 pkg/registry/core/namespace/strategy.go Canonicalize)."""
    name = namespace["metadata"]["name"]
    labels = {**namespace["metadata"].get("labels", {}), "kubernetes.io/metadata.name": name}
    return {**namespace, "metadata": {**namespace["metadata"], "labels": labels}}


def namespace_labels(namespace: str, **labels: str) -> dict[str, str]:
    return {**labels, "kubernetes.io/metadata.name": namespace}  # as `as_created` leaves them


OPTED_IN = {"koordinator.sh/enable-colocation": "true"}
PROBE_POD = sent_labels(KOORDINATOR)


@pytest.mark.parametrize(
    ("namespace", "labels", "pod", "selected"),
    [
        # the one pod it is for: admission-dry-run's Koordinator dry-run pod in the probe's namespace
        ("outpost-probe", {}, PROBE_POD, True),
        ("outpost-probe", {"app.kubernetes.io/part-of": "outpost"}, PROBE_POD, True),
        # other pods of the probe's namespace: the OpenKruise dry-run pod, unlabelled, opted in, a near miss
        ("outpost-probe", {}, sent_labels(OPENKRUISE), False),
        ("outpost-probe", {}, {}, False),
        ("outpost-probe", OPTED_IN, {"app.kubernetes.io/managed-by": "outpost", **OPTED_IN}, False),
        ("outpost-probe", {}, {PROBE_LABEL: "other-check"}, False),
        ("outpost-probe", {}, {"outpost.dev/probes": "admission-dry-run"}, False),
        # the probe label elsewhere: other namespaces, opted in to colocation or not, system ones
        ("default", {}, PROBE_POD, False),
        ("default", OPTED_IN, PROBE_POD, False),
        ("team-batch", OPTED_IN, {**PROBE_POD, **OPTED_IN}, False),
        ("kube-system", {}, PROBE_POD, False),
        ("koordinator-system", {"control-plane": "koordinator"}, PROBE_POD, False),
        ("outpost-probe-2", {"name": "outpost-probe"}, PROBE_POD, False),
        ("outpost", {"app.kubernetes.io/part-of": "outpost"}, PROBE_POD, False),
        # ordinary pods of other namespaces, opted in to colocation or not
        ("default", OPTED_IN, OPTED_IN, False),
        ("default", {}, {"app": "ls-web", "koordinator.sh/qosClass": "LS"}, False),
        ("team-batch", OPTED_IN, {"app": "be-batch", "koordinator.sh/qosClass": "BE", **OPTED_IN}, False),
    ],
)
def test_outposts_profile_selects_the_probe_pod_and_no_other(
    namespace: str, labels: dict[str, str], pod: dict[str, str], selected: bool
) -> None:
    """Judged by koord-manager's rules as `outpost.kube.colocation.select` models them (both selectors matchLabels:
    plain equality over the namespace's and the pod's labels, `outpost.kube.selectors` for expressions)."""
    (profile,) = PROFILES
    selection = select(profile, namespace, namespace_labels(namespace, **labels), pod)
    assert selection.selects is selected, selection.why
    assert selection.chance == 100  # no probability: when it selects, it always applies


def test_the_profile_follows_the_checks_namespace_and_is_shipped_only_with_a_profile_case() -> None:
    ops = AdmissionDryRunParams(namespace="ops")
    (profile,) = admission_dry_run.shipped(ops)
    assert profile["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "ops"}}
    assert select(parse(ClusterColocationProfile, profile, "test"), "ops", namespace_labels("ops"), PROBE_POD).selects
    assert not select(PROFILES[0], "ops", namespace_labels("ops"), PROBE_POD).selects
    assert admission_dry_run.shipped(AdmissionDryRunParams(systems=[OPENKRUISE])) == []


def rbac_output(settings: Settings) -> list[dict[str, Any]]:
    """What of `outpost rbac`'s output for `settings` the check reads (its namespace and the profiles; the fake
    API server enforces no RBAC), as the API server holds it once applied."""
    objects = rbac.manifests(settings) + rbac.shipped_manifests(settings) + rbac.reconciler_manifests(settings)
    return [
        as_created(o) if o["kind"] == "Namespace" else o
        for o in objects
        if o["kind"] in ("Namespace", "ClusterColocationProfile")
    ]


def stock_install_plus(objects: list[dict[str, Any]], koordinator: tuple[int, str]) -> UpstreamApi:
    """Upstream's objects as a stock install leaves them (no ClusterColocationProfile, no probe namespace), then
    `objects`."""
    upstream = UpstreamApi(koordinator, (201, KRUISE_OK))
    upstream.api = FakeApiServer().add(
        *(json.loads(text(f"configurations/chart/{c.configuration}.json")) for c in PARAMS.systems), *objects
    )
    return upstream


def test_a_stock_install_plus_outpost_rbacs_output_is_ok_and_without_the_profile_fails_closed() -> None:
    settings = load_settings(environment_file("local"))
    applied = rbac_output(settings)
    assert [o["metadata"]["name"] for o in applied if o["kind"] == "ClusterColocationProfile"] == [PROFILE_NAME]
    params = AdmissionDryRunParams.model_validate(settings.checks["admission-dry-run"].params)
    with stock_install_plus(applied, (201, KOORD_OK)).cluster() as cluster:
        result = evaluate(fetch(cluster, params), params, NOW)
    assert result.status is Status.OK, result.errors
    assert result.details["systems"]["koordinator"]["profiles"] == {PROFILE_NAME: "selects (100%)"}
    # the profile deleted: koord-manager admits the pod unmutated, and the check cannot observe its webhook
    without = [o for o in applied if o["kind"] != "ClusterColocationProfile"]
    with stock_install_plus(without, (201, unmutated_koordinator_pod())).cluster() as cluster:
        result = evaluate(fetch(cluster, params), params, NOW)
    assert result.status is Status.ERROR
    assert "no ClusterColocationProfile exists" in result.errors[0]
    assert "apply the ClusterColocationProfile outpost-probe-dry-run that `outpost rbac` prints" in result.errors[0]
    assert [step.failure for step in result.next_steps] == ["no-profile-applies"]


# -- the seam -----------------------------------------------------------------------------------------------


class Recorder:
    def __init__(self, code: int, body: str) -> None:
        self.code, self.body = code, body
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        data = self.body.encode()
        return httpx.Response(self.code, headers={"Content-Type": "application/json"}, stream=httpx.ByteStream(data))


def cluster(recorder: Recorder, deadline: float = 60, read_timeout: float = 10) -> Cluster:
    return Cluster(
        "fake",
        "https://fake.invalid",
        verify=ssl.create_default_context(),
        transport=httpx.MockTransport(recorder),
        read_timeout=read_timeout,
        deadline=Deadline(deadline),
    )


@pytest.mark.parametrize(("server_timeout", "query"), [(None, "dryRun=All"), (10, "dryRun=All&timeout=10s")])
def test_dry_run_create_always_sends_dry_run_all(server_timeout: int | None, query: str) -> None:
    recorder = Recorder(201, KOORD_OK)
    with cluster(recorder) as c:
        response = c.dry_run_create(PODS, {"kind": "Pod"}, server_timeout=server_timeout)
    (request,) = recorder.requests
    assert (request.method, request.url.path, str(request.url.params)) == ("POST", PODS, query)
    assert json.loads(request.content) == {"kind": "Pod"}
    assert response.status_code == 201


def test_a_server_timeout_below_one_second_is_refused() -> None:
    with cluster(Recorder(201, "{}")) as c, pytest.raises(ValueError, match="at least 1 s"):
        c.dry_run_create(PODS, {}, server_timeout=0)


def test_rbac_refusal_raises_auth_error() -> None:
    rbac = json.dumps(
        failure(
            403,
            "Forbidden",
            'pods is forbidden: User "outpost-probe" cannot create resource "pods" in API group "" in the namespace '
            '"default"',
        )
    )
    with cluster(Recorder(403, rbac)) as c, pytest.raises(ClusterAuthError, match="cannot create resource"):
        c.dry_run_create("/api/v1/namespaces/default/pods", {"kind": "Pod"})


def test_webhook_denial_is_returned_for_the_check_to_judge() -> None:
    denied = json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'admission webhook "vpod.koordinator.sh" denied the request: bad qos',
            "code": 403,
        }
    )
    with cluster(Recorder(403, denied)) as c:
        assert c.dry_run_create(PODS, {"kind": "Pod"}).status_code == 403
    with cluster(Recorder(403, denied)) as c, pytest.raises(ClusterAuthError):
        c.get(PODS)  # a read never treats a 403 as anything but our identity refused


@pytest.mark.parametrize(("deadline", "asked", "read"), [(60, 25, 25), (15, 25, 15), (60, None, 10)])
def test_dry_run_may_wait_longer_than_a_read_but_not_past_the_deadline(
    deadline: float, asked: float | None, read: float
) -> None:
    recorder = Recorder(201, "{}")
    with cluster(recorder, deadline=deadline) as c:
        c.dry_run_create(PODS, {}, timeout=asked)
        c.get("/version", timeout=asked)
    timeouts: list[dict[str, Any]] = [r.extensions["timeout"] for r in recorder.requests]
    assert timeouts[0]["read"] == pytest.approx(read, abs=0.5)
    assert timeouts[1]["read"] == pytest.approx(min(read, 10), abs=0.5)  # a GET never exceeds the read timeout


def test_check_is_registered_with_its_catalogue_row() -> None:
    check = admission_dry_run.CHECK
    assert (check.name, check.system, check.severity) == ("admission-dry-run", "koordinator / openkruise", "critical")


def test_a_status_nested_past_the_parser_is_no_status() -> None:
    """A body nesting 100,000 levels is read as text, never a RecursionError ('internal error')."""
    assert admission_dry_run._status("[" * 100_000 + "]" * 100_000) is None
