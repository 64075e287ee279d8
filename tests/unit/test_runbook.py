"""Runbook entries: filled in with the names a line carries, paired with their lines, scrubbed, classed by error."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from outpost import redaction, registry, runbook
from outpost.check import MissingRunbook
from outpost.errors import (
    AuthRefused,
    ClusterAuthError,
    ClusterRequestRefused,
    ClusterResponseError,
    ClusterTimeout,
    ClusterUnreachable,
    ConfigError,
    MalformedResponse,
    OutpostError,
    ReportError,
    ResponseTooLarge,
    SecretError,
)
from outpost.result import Result, Status
from outpost.runbook import NO_CREDENTIAL
from outpost.tooling.catalogue import runbook_section

STALE = runbook.Runbook(
    "lease-stale",
    "Leader Lease not renewed",
    "{holder} stopped renewing",
    "kubectl -n {namespace} get lease {name} -o yaml",
    "kubectl -n {namespace} logs {holder} --tail=100",
)


def test_a_step_is_filled_in_with_the_real_names() -> None:
    step = STALE.step(namespace="koordinator-system", name="koordinator-manager", holder="koord-manager-7d9")
    assert step.failure == "lease-stale"
    assert step.cause == "koord-manager-7d9 stopped renewing"
    assert step.command == "kubectl -n koordinator-system get lease koordinator-manager -o yaml"
    assert step.see == "kubectl -n koordinator-system logs koord-manager-7d9 --tail=100"
    assert STALE.placeholders == {"holder", "namespace", "name"}


def test_a_name_the_template_needs_and_the_check_does_not_give_is_a_bug_not_a_blank() -> None:
    with pytest.raises(KeyError, match="holder"):
        STALE.step(namespace="koordinator-system", name="koordinator-manager")


def test_findings_become_lines_and_steps_in_the_same_order() -> None:
    first = STALE.at("lease a: stale", namespace="ns", name="a", holder="pa")
    second = STALE.at("lease b: stale", namespace="ns", name="b", holder="pb")
    result = Result.failed("leader-leases", "2 leases stale", [first, second])
    assert result.errors == ["lease a: stale", "lease b: stale"]
    assert [step.command for step in result.next_steps] == [
        "kubectl -n ns get lease a -o yaml",
        "kubectl -n ns get lease b -o yaml",
    ]
    assert result.model_dump(mode="json")["next_steps"][1]["see"] == "kubectl -n ns logs pb --tail=100"


def test_every_line_has_its_step_or_none_has() -> None:
    finding = STALE.at("lease a: stale", namespace="ns", name="a", holder="pa")
    with pytest.raises(ValueError, match="every error line its next step, or none"):
        Result.degraded("leader-leases", "2 problems", [finding, "lease b: stale"])
    with pytest.raises(ValidationError, match="line for line"):
        Result(check="c", status=Status.FAILED, summary="s", errors=["a", "b"], next_steps=[finding.next])


def test_a_credential_in_a_filled_in_name_is_scrubbed() -> None:
    secret = "s3cr3t-token-value-for-runbook-test"
    redaction.register(secret)
    step = STALE.step(namespace="ns", name="a", holder=f"pod-{secret}")
    assert secret not in step.model_dump_json()
    assert (
        secret
        not in Result.failed("c", "s", [STALE.at("line", namespace="ns", name="a", holder=secret)]).model_dump_json()
    )


@pytest.mark.parametrize(
    ("error", "failure"),
    [
        (AuthRefused("GET /api/v1/nodes: 403 Forbidden"), "auth-refused"),
        (ClusterAuthError("kubeconfig credentials: exec plugin exited with status 1"), "no-credential"),
        (ClusterTimeout("deadline of 20 s ran out"), "timed-out"),
        (ClusterUnreachable("connect: connection refused"), "unreachable"),
        (ResponseTooLarge("over max_response_bytes"), "too-large"),
        (ClusterResponseError("GET /livez: 500", 500), "unexpected-answer"),
        (ClusterRequestRefused("431 Request Header Fields Too Large", 431), "unexpected-answer"),
        (MalformedResponse("items: not a list"), "unexpected-answer"),
        (ConfigError("checks.x.params.y: not a number"), "setup"),
        (SecretError("ssm:/outpost/hb: not found"), "setup"),
        (OutpostError("anything else Outpost raises"), "setup"),
        (ReportError("heartbeat: 404"), "not-delivered"),
        (RuntimeError("a bug"), "internal"),
        (None, "stopped"),
    ],
)
def test_a_run_that_could_not_observe_gets_the_step_of_its_class(error: BaseException | None, failure: str) -> None:
    entry = runbook.for_error(error)
    assert entry.failure == failure
    step = entry.step(check="koordlet-coverage", environment="prod")
    assert "{" not in step.command
    assert step.command.startswith(("outpost ", "kubectl "))


def test_every_could_not_observe_class_needs_only_the_check_and_the_environment() -> None:
    for entry in runbook.COULD_NOT_OBSERVE:
        assert entry.placeholders <= {"check", "environment"}, entry.failure
    assert len({entry.failure for entry in runbook.COULD_NOT_OBSERVE}) == len(runbook.COULD_NOT_OBSERVE)


def test_a_brace_the_command_needs_is_written_twice_and_shown_once() -> None:
    """A kubectl jsonpath needs `{...}`: the template doubles it, the step and docs/runbooks.md show it once."""
    server = runbook.Runbook(
        "network", "Unreachable", "down", "kubectl config view --minify -o jsonpath='{{.clusters[0]}}' -n {namespace}"
    )
    assert server.placeholders == {"namespace"}
    assert server.step(namespace="ns").command == "kubectl config view --minify -o jsonpath='{.clusters[0]}' -n ns"
    assert "`kubectl config view --minify -o jsonpath='{.clusters[0]}' -n <namespace>`" in runbook_section("", [server])


def test_every_check_declares_its_failure_classes() -> None:
    for spec in [*registry.checks(), *registry.jobs()]:
        assert spec.runbooks, f"{spec.name} declares no failure class (CheckSpec.runbooks)"
        for entry in spec.runbooks:
            assert all((entry.title, entry.cause, entry.command)), f"{spec.name}: {entry.failure} is not filled in"


def judged(given: Result) -> Result:
    """What leader-leases' contract makes of `given`, had its `evaluate` returned it."""
    spec = registry.get("leader-leases")

    def evaluate(_data: object, _params: object, _now: datetime) -> Result:
        return given

    return dataclasses.replace(spec, evaluate=evaluate).judge(None, spec.params(), datetime.now(UTC))


def test_a_failed_line_without_its_step_is_a_bug_the_runner_reports() -> None:
    bare = Result(check="leader-leases", status=Status.FAILED, summary="lease a: stale", errors=["lease a: stale"])
    foreign = Result.failed("leader-leases", "s", [NO_CREDENTIAL.at("lease a: stale", check="x", environment="y")])
    for given in (bare, foreign):
        with pytest.raises(MissingRunbook, match="leader-leases: "):
            judged(given)
    degraded = Result.degraded("leader-leases", "s", ["a line without a step still pings"])
    assert judged(degraded) is degraded
