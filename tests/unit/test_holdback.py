"""Hold-back (`outpost.holdback`): the hold decision, the environment's rules, the inhibitor and the seam to it.

Vigilmon is met behind the real `VigilmonClient` over `httpx.MockTransport` (every call recorded, answered by a
script), as tests/unit/test_maintenance.py does; the Lambda transport behind botocore's Stubber; the run through
`run_check` with a cluster that refuses the connection (a real `error`). The stand-in Vigilmon over real HTTP,
and the HTTP transport against a real server, are in tests/functional/test_holdback_standin.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber

from kit.vigilmon import API_KEY, ScriptedVigilmon
from outpost import registry
from outpost.cli import main
from outpost.config import Settings, parse_settings
from outpost.errors import ClusterUnreachable, InvocationError, ReportError
from outpost.holdback import decision, inhibitor
from outpost.holdback.decision import HoldRequest, Window
from outpost.holdback.senders import HttpSender, LambdaSender, LocalSender, sender_for
from outpost.result import Result, Status
from outpost.runner import run_check

NOW = datetime(2026, 12, 7, 13, 0, tzinfo=UTC)
MONITORS = {
    "apiserver-health": "mon-api",
    "koord-manager-health": "mon-koord",
    "koord-webhook": "mon-koord-webhook",
    "leader-leases": "mon-leases",
    "admission-dry-run": "mon-dry-run",
    "koordlet-coverage": "mon-koordlet",
}


def settings(
    checks: dict[str, dict[str, Any]] | None = None, *, hold_back: dict[str, Any] | None = None, **top: Any
) -> Settings:
    document: dict[str, Any] = {
        "environment": "staging",
        "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}, "deadline_seconds": 25},
        "vigilmon": {"api_key": "env:TEST_VIGILMON_KEY"},
        "hold_back": {"enabled": True, **(hold_back or {})},
        "checks": checks if checks is not None else {name: {"monitor_id": m} for name, m in MONITORS.items()},
    }
    for key, value in top.items():
        document[key] = value if not isinstance(value, dict) else {**document.get(key, {}), **value}
    return parse_settings(document)


def failing(check: str, status: Status = Status.ERROR, **details: Any) -> Result:
    return Result(check=check, status=status, summary=f"{check} {status.value}", details=details)


# -- which run asks ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "wanted"),
    [
        pytest.param(failing("apiserver-health"), "error", id="api error: the typical outage"),
        pytest.param(failing("apiserver-health", Status.FAILED), "failed", id="api failed"),
        pytest.param(failing("koord-manager-health", Status.FAILED), "failed", id="manager failed"),
        pytest.param(failing("apiserver-health", Status.OK), None, id="ok asks nothing"),
        pytest.param(failing("apiserver-health", Status.DEGRADED), None, id="degraded asks nothing"),
        pytest.param(
            failing("apiserver-health", observed_status="ok"), None, id="observed ok, ping undelivered: not down"
        ),
        pytest.param(
            failing("apiserver-health", observed_status="degraded"), None, id="observed degraded, ping undelivered"
        ),
        pytest.param(failing("apiserver-health", stopped=True), None, id="stopped: nothing after a stop"),
        pytest.param(failing("admission-dry-run", Status.FAILED), None, id="a leaf has nothing to hold"),
        pytest.param(failing("ls-latency"), None, id="a check not configured here"),
    ],
)
def test_which_run_asks_for_a_hold(result: Result, wanted: str | None) -> None:
    request = decision.request_for(settings(), result)
    if wanted is None:
        assert request is None
    else:
        assert request == HoldRequest.model_validate(
            {"environment": "staging", "parent": result.check, "status": wanted}
        )


def test_nothing_is_asked_with_hold_back_off_or_the_parent_disabled() -> None:
    off = settings(hold_back={"enabled": False})
    assert decision.request_for(off, failing("apiserver-health")) is None
    checks: dict[str, dict[str, Any]] = {name: {"monitor_id": m} for name, m in MONITORS.items()}
    checks["apiserver-health"]["enabled"] = False
    assert decision.request_for(settings(checks), failing("apiserver-health")) is None


# -- which windows, how long ------------------------------------------------------------------------------------


def test_a_koord_manager_outage_holds_its_three_surfaces() -> None:
    """koord-manager pages once: koord-webhook, leader-leases and admission-dry-run are held, nothing else."""
    held = decision.windows(settings(), "koord-manager-health", NOW)
    assert [(w.check, w.monitor_id) for w in held] == [
        ("koord-webhook", "mon-koord-webhook"),
        ("leader-leases", "mon-leases"),
        ("admission-dry-run", "mon-dry-run"),
    ]


def test_an_api_server_outage_holds_every_configured_dependant_but_never_itself() -> None:
    held = decision.windows(settings(), "apiserver-health", NOW)
    assert [w.check for w in held] == [
        name for name in registry.names() if name in MONITORS and name != "apiserver-health"
    ]
    assert "mon-api" not in {w.monitor_id for w in held}


@pytest.mark.parametrize(
    ("parent_minutes", "dependant_minutes", "margin", "expected"),
    [
        # schedules + 2 runs (deadline 25 s + 5 s platform margin, each) + margin, rounded up to whole minutes
        pytest.param(1, 1, 2, 5, id="1+1 min, 60 s of runs, margin 2: 5 min"),
        pytest.param(1, 5, 2, 9, id="a slower dependant waits for its next run"),
        pytest.param(5, 1, 0, 7, id="a slower parent renews less often"),
        pytest.param(1, 1, 0, 3, id="no margin"),
    ],
)
def test_a_window_outlives_the_next_renewal_and_the_dependants_next_run(
    parent_minutes: int, dependant_minutes: int, margin: int, expected: int
) -> None:
    checks = {
        "koord-manager-health": {"monitor_id": "a", "schedule_minutes": parent_minutes},
        "koord-webhook": {"monitor_id": "b", "schedule_minutes": dependant_minutes},
    }
    configured = settings(checks, hold_back={"margin_minutes": margin})
    [window] = decision.windows(configured, "koord-manager-health", NOW)
    assert window == Window("koord-webhook", "b", expected, NOW + timedelta(minutes=expected))


def test_a_window_is_never_longer_than_the_environment_allows() -> None:
    checks = {
        "koord-manager-health": {"monitor_id": "a", "schedule_minutes": 60},
        "koord-webhook": {"monitor_id": "b", "schedule_minutes": 60},
    }
    [window] = decision.windows(settings(checks, vigilmon={"maintenance_max_minutes": 30}), "koord-manager-health", NOW)
    assert window.minutes == 30


@pytest.mark.parametrize(
    ("dependant", "why"),
    [
        pytest.param({"enabled": False, "monitor_id": "b"}, "disabled", id="disabled"),
        pytest.param({}, "no monitor", id="no monitor id"),
        pytest.param({"monitor_id": "a"}, "the parent's own monitor", id="shares the parent's monitor"),
    ],
)
def test_a_dependant_that_cannot_be_held_is_left_out(dependant: dict[str, Any], why: str) -> None:
    checks = {"koord-manager-health": {"monitor_id": "a"}, "koord-webhook": dependant}
    assert decision.windows(settings(checks), "koord-manager-health", NOW) == [], why


@pytest.mark.parametrize(
    ("result", "held"),
    [
        pytest.param(failing("apiserver-health"), [c for c in MONITORS if c != "apiserver-health"], id="api error"),
        pytest.param(
            failing("koord-manager-health", Status.FAILED),
            ["koord-webhook", "leader-leases", "admission-dry-run"],
            id="koord-manager failed",
        ),
        pytest.param(failing("koord-manager-health", Status.DEGRADED), [], id="degraded holds nothing"),
        pytest.param(failing("koord-manager-health", observed_status="ok"), [], id="not pinged holds nothing"),
        pytest.param(failing("koordlet-coverage", Status.FAILED), [], id="its dependant is not configured"),
    ],
)
def test_the_decision_from_a_result_to_its_windows(result: Result, held: list[str]) -> None:
    windows = decision.decide(settings(), result, NOW)
    assert sorted(w.check for w in windows) == sorted(held)
    assert all(w.until == NOW + timedelta(minutes=w.minutes) for w in windows)
    assert all(1 <= w.minutes <= 240 for w in windows)


# -- the environment's rules ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "problems"),
    [
        pytest.param(lambda: settings(), [], id="complete"),
        pytest.param(
            lambda: settings(vigilmon={"api_key": None}),
            ["vigilmon.api_key: not set, but hold_back.enabled needs it"],
            id="no API key",
        ),
        pytest.param(
            lambda: settings({"koord-manager-health": {"monitor_id": "a"}, "koord-webhook": {}}),
            ["checks.koord-webhook.monitor_id: required while hold_back.enabled"],
            id="a dependant without a monitor",
        ),
        pytest.param(
            lambda: settings({"koord-manager-health": {"monitor_id": "a"}, "koord-webhook": {"monitor_id": "a"}}),
            ["checks.koord-webhook.monitor_id: the same monitor as checks.koord-manager-health.monitor_id"],
            id="a dependant on its parent's monitor",
        ),
        pytest.param(
            lambda: settings(
                {
                    "koord-manager-health": {"monitor_id": "a", "schedule_minutes": 60},
                    "koord-webhook": {"monitor_id": "b", "schedule_minutes": 60},
                },
                vigilmon={"maintenance_max_minutes": 60},
            ),
            ["vigilmon.maintenance_max_minutes: 60 is shorter than the 123 min window"],
            id="windows longer than allowed",
        ),
        pytest.param(
            lambda: settings(hold_back={"inhibitor_url": "https://inhibitor.example.test"}),
            ["hold_back.inhibitor_url: Cloud Functions only"],
            id="an inhibitor URL off Cloud Functions",
        ),
        pytest.param(
            lambda: settings({"koord-webhook": {}}, vigilmon={"api_key": None}, hold_back={"enabled": False}),
            [],
            id="off: nothing is required",
        ),
    ],
)
def test_hold_back_problems_name_the_bad_field(build: Callable[[], Settings], problems: list[str]) -> None:
    found = decision.hold_back_problems(build())
    assert len(found) == len(problems), found
    assert all(line.startswith(prefix) for line, prefix in zip(found, problems, strict=True)), found


def test_outpost_validate_refuses_hold_back_without_the_api_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "staging.yaml"
    document = {
        "environment": "staging",
        "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}},
        "hold_back": {"enabled": True},
        "checks": {"apiserver-health": {"monitor_id": "a"}, "koord-manager-health": {"monitor_id": "b"}},
    }
    path.write_text(yaml.safe_dump(document))
    assert main(["validate", "--config", str(path)]) == 64
    assert "vigilmon.api_key: not set, but hold_back.enabled needs it" in capsys.readouterr().err


def test_a_bad_inhibitor_url_is_refused_by_its_path() -> None:
    with pytest.raises(Exception, match=r"hold_back\.inhibitor_url: .*https://"):
        settings(hold_back={"inhibitor_url": "http://inhibitor.example.test"})


# -- the inhibitor ----------------------------------------------------------------------------------------------


def request(parent: str = "koord-manager-health", **fields: Any) -> dict[str, Any]:
    return {"environment": "staging", "parent": parent, "status": "failed", **fields}


def test_the_inhibitor_opens_each_dependants_window_for_its_own_length(capsys: pytest.CaptureFixture[str]) -> None:
    vigilmon = ScriptedVigilmon()
    outcome = inhibitor.handle(settings(), request(), connect=vigilmon.connect, now=lambda: NOW)
    expected = [(w.monitor_id, w.minutes) for w in decision.windows(settings(), "koord-manager-health", NOW)]
    assert vigilmon.calls == expected
    assert [item["check"] for item in outcome["held"]] == ["koord-webhook", "leader-leases", "admission-dry-run"]
    [line] = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    assert line["message"].startswith("inhibitor: koord-manager-health failed: held back 3 dependant(s)")
    assert API_KEY not in json.dumps(line)


@pytest.mark.parametrize(
    ("document", "cause"),
    [
        pytest.param(request(environment="prod"), "this inhibitor serves 'staging'", id="another environment"),
        pytest.param(request(parent="no-such-check"), "not a check of the catalogue", id="unknown parent"),
        pytest.param(request(parent="ls-latency"), "not enabled in environment", id="parent not configured"),
        pytest.param(request(status="ok"), "status", id="a healthy status"),
        pytest.param(request(monitor_id="mon-api"), "monitor_id: Extra inputs", id="a monitor smuggled in"),
        pytest.param(request(minutes=100000), "minutes: Extra inputs", id="a length smuggled in"),
        pytest.param(["not", "an", "object"], "(request)", id="not an object"),
    ],
)
def test_the_inhibitor_refuses_a_bad_request_and_sends_nothing(document: object, cause: str) -> None:
    vigilmon = ScriptedVigilmon()
    with pytest.raises(InvocationError, match="refused") as refused:
        inhibitor.handle(settings(), document, connect=vigilmon.connect, now=lambda: NOW)
    assert cause in str(refused.value)
    assert vigilmon.calls == []


def test_the_inhibitor_refuses_when_hold_back_is_off() -> None:
    vigilmon = ScriptedVigilmon()
    with pytest.raises(InvocationError, match=r"hold_back\.enabled is off"):
        inhibitor.handle(settings(hold_back={"enabled": False}), request(), connect=vigilmon.connect)
    assert vigilmon.calls == []


def test_the_inhibitor_never_puts_the_parents_monitor_in_maintenance() -> None:
    vigilmon = ScriptedVigilmon()
    inhibitor.handle(settings(), request(parent="apiserver-health", status="error"), connect=vigilmon.connect)
    assert vigilmon.calls
    assert "mon-api" not in {monitor for monitor, _ in vigilmon.calls}


@pytest.mark.parametrize(
    ("failure", "ended"),
    [
        pytest.param(429, ["mon-koord-webhook"], id="refused: not applied, the opened one ended"),
        pytest.param(503, ["mon-koord-webhook", "mon-leases"], id="5xx: may have applied, ended too"),
        pytest.param(0, ["mon-koord-webhook", "mon-leases"], id="no answer: may have applied, ended too"),
    ],
)
def test_a_window_that_fails_ends_the_ones_opened(failure: int, ended: list[str]) -> None:
    """All or nothing, as `outpost maintenance start`: the dependants then alert as without hold-back."""

    def script(monitor: str, minutes: int) -> int:
        return failure if monitor == "mon-leases" and minutes > 0 else 200

    vigilmon = ScriptedVigilmon(script)
    with pytest.raises(ReportError, match="maintenance start failed for leader-leases"):
        inhibitor.handle(settings(), request(), connect=vigilmon.connect, now=lambda: NOW)
    assert [monitor for monitor, minutes in vigilmon.calls if minutes == 0] == ended
    assert "mon-dry-run" not in {monitor for monitor, _ in vigilmon.calls}  # nothing after the failure


def test_nothing_to_hold_sends_nothing() -> None:
    vigilmon = ScriptedVigilmon()
    outcome = inhibitor.handle(
        settings({"koord-manager-health": {"monitor_id": "a"}}), request(), connect=vigilmon.connect
    )
    assert outcome["held"] == []
    assert vigilmon.calls == []


# -- the seam ---------------------------------------------------------------------------------------------------


def test_the_local_sender_calls_the_inhibitor_in_process() -> None:
    vigilmon = ScriptedVigilmon()
    account = LocalSender(settings(), vigilmon.connect).send(HoldRequest(**request()))
    assert account.startswith("held back koord-webhook ")
    assert len(vigilmon.calls) == 3


def test_the_local_sender_turns_a_refusal_into_a_report_error() -> None:
    with pytest.raises(ReportError, match="refused"):
        LocalSender(settings(), ScriptedVigilmon().connect).send(HoldRequest(**request(parent="ls-latency")))


def lambda_client() -> Any:
    return boto3.client("lambda", region_name="eu-west-1", aws_access_key_id="testing", aws_secret_access_key="testing")


def test_the_lambda_sender_invokes_the_inhibitor_asynchronously() -> None:
    client = lambda_client()
    hold = HoldRequest(**request())
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {"StatusCode": 202},
            {
                "FunctionName": "outpost-staging-inhibitor",
                "InvocationType": "Event",
                "Payload": hold.model_dump_json().encode(),
            },
        )
        account = LambdaSender("outpost-staging-inhibitor", client).send(hold)
        stub.assert_no_pending_responses()
    assert account == "asked outpost-staging-inhibitor (asynchronous invocation accepted)"


@pytest.mark.parametrize(
    ("answer", "cause"),
    [
        pytest.param({"error": "AccessDeniedException"}, "lambda Invoke failed (AccessDeniedException)", id="denied"),
        pytest.param({"error": "ResourceNotFoundException"}, "(ResourceNotFoundException)", id="not deployed"),
        pytest.param({"StatusCode": 200}, "answered 200 (202 accepts", id="not asynchronous"),
    ],
)
def test_the_lambda_sender_names_why_it_could_not_ask(answer: dict[str, Any], cause: str) -> None:
    client = lambda_client()
    with Stubber(client) as stub:
        if "error" in answer:
            stub.add_client_error("invoke", service_error_code=answer["error"], http_status_code=403)
        else:
            stub.add_response("invoke", answer)
        with pytest.raises(ReportError, match="hold request to outpost-staging-inhibitor") as failed:
            LambdaSender("outpost-staging-inhibitor", client).send(HoldRequest(**request()))
    assert cause in str(failed.value)


def test_each_platform_gets_its_transport() -> None:
    assert sender_for(settings(hold_back={"enabled": False}), "aws") is None
    aws = sender_for(settings(), "aws")
    assert isinstance(aws, LambdaSender)
    assert aws.function == "outpost-staging-inhibitor"
    assert isinstance(sender_for(settings(), "local"), LocalSender)


def test_the_http_sender_refuses_plain_http_off_loopback() -> None:
    with pytest.raises(ValueError, match="https://"):
        HttpSender("http://inhibitor.example.test/", id_token=lambda _audience: "t")
    assert HttpSender("http://127.0.0.1:9/", id_token=lambda _audience: "t").url == "http://127.0.0.1:9/"


# -- the run ----------------------------------------------------------------------------------------------------


class Recording:
    def __init__(self, failure: Exception | None = None) -> None:
        self.sent: list[HoldRequest] = []
        self.failure = failure

    def send(self, request: HoldRequest) -> str:
        self.sent.append(request)
        if self.failure is not None:
            raise self.failure
        return "asked"


def unreachable(_settings: Settings, _deadline: object) -> Any:
    raise ClusterUnreachable("connection refused")


def test_a_failing_parents_run_asks_and_keeps_its_status() -> None:
    hold = Recording()
    result = run_check(settings(), "apiserver-health", log=False, cluster_factory=unreachable, hold=hold)
    assert result.status is Status.ERROR
    assert hold.sent == [HoldRequest(environment="staging", parent="apiserver-health", status="error")]
    assert result.details["hold_back"] == "asked"


def test_a_request_that_cannot_be_sent_changes_nothing_but_the_account() -> None:
    hold = Recording(ReportError("hold request to outpost-staging-inhibitor: lambda Invoke failed (Throttling)"))
    result = run_check(settings(), "apiserver-health", log=False, cluster_factory=unreachable, hold=hold)
    assert result.status is Status.ERROR
    assert result.details["hold_back"] == (
        "not asked, the dependants alert: hold request to outpost-staging-inhibitor: lambda Invoke failed (Throttling)"
    )


def test_an_on_demand_run_without_report_asks_nothing() -> None:
    hold = Recording()
    result = run_check(settings(), "apiserver-health", report=False, log=False, cluster_factory=unreachable, hold=hold)
    assert result.status is Status.ERROR
    assert hold.sent == []
    assert "hold_back" not in result.details
