"""Hold-back end to end: a failing parent's real runs, the inhibitor, the Vigilmon stand-in's alert rule.

The environment's monitors are created in the stand-in from its own `outpost monitors` document; the cluster is a
closed loopback port, so every run of apiserver-health is a real `error` (connection refused), the API server
outage as a deployed function sees it. Time is the stand-in's fake clock: an outage of many minutes takes seconds.
Shown here: while the parent keeps failing (and renewing), only its own monitor alerts; when its function falls
silent, or the inhibitor cannot reach Vigilmon, the dependants alert as they would without hold-back; the
Cloud Functions transport (an HTTP POST with an ID token to the inhibitor's target, served by functions-framework)
and the Lambda entry open the same windows.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import functions_framework
import httpx
import pytest
from fake_clock import FakeClock
from local_server import LocalServer, Recorded, Reply
from werkzeug.serving import make_server

from outpost.config import Settings
from outpost.errors import ReportError
from outpost.holdback.decision import HoldRequest, windows
from outpost.holdback.senders import HttpSender, LocalSender
from outpost.result import Status
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost.tooling import monitors
from outpost_sandbox.vigilmon import Vigilmon

PARENT = "apiserver-health"
DEPENDANTS = ["koord-manager-health", "koord-webhook", "leader-leases", "admission-dry-run"]
INHIBITOR_ENTRY = Path(__file__).resolve().parents[2] / "functions" / "inhibitor" / "main.py"


def monitor_id(check: str) -> str:
    return f"mon-{check}"


@pytest.fixture
def env_file(tmp_path: Path, vigilmon: Vigilmon, closed_port: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TEST_VIGILMON_KEY", vigilmon.api_key)
    monkeypatch.setenv("OUTPOST_TEST_TOKEN", "sa-token-not-used-for-anything")
    path = tmp_path / "staging.yaml"
    document = {
        "environment": "staging",
        "cluster": {
            "name": "unreachable",
            "auth": {"mode": "token", "server": f"https://127.0.0.1:{closed_port}", "token": "env:OUTPOST_TEST_TOKEN"},
            "connect_timeout_seconds": 1,
            "read_timeout_seconds": 1,
            "deadline_seconds": 5,
        },
        "heartbeat": {"timeout_seconds": 2, "retries": 0},
        "vigilmon": {"api_url": vigilmon.api_url, "api_key": "env:TEST_VIGILMON_KEY"},
        "hold_back": {"enabled": True},
        "checks": {
            check: {"monitor_id": monitor_id(check), "heartbeat": f"env:TEST_HEARTBEAT_{index}"}
            for index, check in enumerate([PARENT, *DEPENDANTS])
        },
    }
    path.write_text(json.dumps(document))
    created = vigilmon.create_monitors(monitors.document(load_settings(path)))
    for index, check in enumerate([PARENT, *DEPENDANTS]):
        monkeypatch.setenv(f"TEST_HEARTBEAT_{index}", vigilmon.heartbeat_url(created[check].key))
    return path


@pytest.fixture
def settings(env_file: Path) -> Settings:
    return load_settings(env_file)


def overdue_after(vigilmon: Vigilmon) -> float:
    """Seconds of silence after which every monitor is overdue (the longest interval + grace)."""
    return max((m.interval_seconds or 0) + m.grace_seconds for m in vigilmon.monitors.values())


def parent_run(settings: Settings) -> str:
    """One scheduled run of the parent, as its function does it; what it says of the hold."""
    result = run_check(settings, PARENT, log=False, hold=LocalSender(settings))
    assert result.status is Status.ERROR
    assert "connection refused" in result.summary
    return str(result.details["hold_back"])


def alerted(vigilmon: Vigilmon) -> list[str]:
    return [event.check or "" for event in vigilmon.events if event.kind == "alert"]


def test_while_the_parent_fails_only_its_own_monitor_alerts(
    settings: Settings, vigilmon: Vigilmon, clock: FakeClock
) -> None:
    """The API server down for three times the longest overdue: one alert, the parent's; none of the four."""
    assert parent_run(settings).startswith("held back koord-manager-health ")
    held = {call["monitor_id"] for call in vigilmon.maintenance_calls}
    assert held == {monitor_id(check) for check in DEPENDANTS}
    assert monitor_id(PARENT) not in held  # the parent's own monitor is never put in maintenance
    end = clock.now + 3 * overdue_after(vigilmon)
    while clock.now < end:  # the parent runs every minute and renews; its dependants never ping
        clock.advance(60)
        parent_run(settings)
        vigilmon.evaluate()
    assert alerted(vigilmon) == [PARENT]


def test_when_the_parents_function_falls_silent_the_windows_lapse_and_every_monitor_alerts(
    settings: Settings, vigilmon: Vigilmon, clock: FakeClock
) -> None:
    parent_run(settings)  # one failing run, then its function is dead: no more runs, no renewal
    opened = clock.now
    lengths = [window.minutes for window in windows(settings, PARENT, datetime.now(UTC))]
    assert overdue_after(vigilmon) < 60 * min(lengths)  # without the windows they would alert inside them
    while clock.now + 10 < opened + 60 * min(lengths):
        clock.advance(10)
        vigilmon.evaluate()
    assert set(alerted(vigilmon)) <= {PARENT}  # inside the windows, only the parent could alert
    longest = max(lengths)
    clock.now = opened + max(60 * longest, overdue_after(vigilmon)) + 1
    vigilmon.evaluate()
    assert sorted(alerted(vigilmon)) == sorted([PARENT, *DEPENDANTS])


def test_when_the_inhibitor_cannot_reach_vigilmon_nothing_is_held(
    settings: Settings, vigilmon: Vigilmon, clock: FakeClock
) -> None:
    vigilmon.fail_maintenance = lambda _monitor, _minutes: 503
    account = parent_run(settings)
    assert account.startswith("not asked, the dependants alert: maintenance start failed for koord-manager-health")
    assert vigilmon.maintenance_calls == []
    clock.advance(overdue_after(vigilmon) + 1)
    vigilmon.evaluate()
    assert sorted(alerted(vigilmon)) == sorted([PARENT, *DEPENDANTS])  # as without hold-back


def test_a_held_dependants_ping_still_resolves_it(settings: Settings, vigilmon: Vigilmon, clock: FakeClock) -> None:
    """Resolutions are never held: a dependant that alerted before the parent failed resolves on its next ping,
    window or not (the stand-in, as the service's tutorials describe it: a ping is a ping)."""
    clock.advance(overdue_after(vigilmon) + 1)
    vigilmon.evaluate()
    assert "koord-webhook" in alerted(vigilmon)
    parent_run(settings)
    assert vigilmon.monitor_for("koord-webhook").in_maintenance(clock.now)
    url = vigilmon.heartbeat_url(monitor_id("koord-webhook"))
    assert httpx.get(url, timeout=5).status_code == 200
    assert [event.kind for event in vigilmon.events_for("koord-webhook")] == ["alert", "resolve"]


# -- the deployed transports ------------------------------------------------------------------------------------


@pytest.fixture
def inhibitor_url(env_file: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The inhibitor's Cloud Functions target, loaded by functions-framework from its entry module."""
    monkeypatch.setenv("OUTPOST_CONFIG", str(env_file))
    app = functions_framework.create_app(target="http", source=str(INHIBITOR_ENTRY))  # type: ignore[no-untyped-call]
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    thread.join(5)


def test_the_cloud_functions_inhibitor_opens_the_windows_a_post_asks_for(
    inhibitor_url: str, vigilmon: Vigilmon, capsys: pytest.CaptureFixture[str]
) -> None:
    sender = HttpSender(inhibitor_url, id_token=lambda audience: f"id-token-for-{audience}")
    account = sender.send(HoldRequest(environment="staging", parent=PARENT, status="error"))
    assert account == "the inhibitor held the dependants (HTTP 200)"
    assert {call["monitor_id"] for call in vigilmon.maintenance_calls} == {monitor_id(c) for c in DEPENDANTS}
    assert httpx.get(inhibitor_url, timeout=5).status_code == 405
    refused = httpx.post(inhibitor_url, json={"environment": "staging", "parent": PARENT}, timeout=5)
    assert refused.status_code == 400
    assert "status" in refused.json()["error"]
    assert vigilmon.api_key not in capsys.readouterr().out


def test_a_refused_post_is_a_report_error_of_the_sender(inhibitor_url: str, vigilmon: Vigilmon) -> None:
    sender = HttpSender(inhibitor_url, id_token=lambda _audience: "id-token")
    with pytest.raises(ReportError, match="HTTP 400"):
        sender.send(HoldRequest(environment="staging", parent="ls-latency", status="failed"))
    assert vigilmon.maintenance_calls == []


def test_the_http_sender_posts_the_request_with_an_id_token_for_the_inhibitor(receiver: LocalServer) -> None:
    audiences: list[str] = []

    def id_token(audience: str) -> str:
        audiences.append(audience)
        return "eyJ.id-token.for-test"

    url = f"{receiver.base_url}/"
    HttpSender(url, id_token=id_token).send(HoldRequest(environment="staging", parent=PARENT, status="error"))
    [sent] = receiver.requests
    assert (sent.method, sent.headers["Authorization"]) == ("POST", "Bearer eyJ.id-token.for-test")
    assert json.loads(sent.body) == {"environment": "staging", "parent": PARENT, "status": "error"}
    assert audiences == [url]


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        pytest.param((503, {}, b"unavailable"), "HTTP 503", id="5xx"),
        pytest.param((403, {}, b"forbidden"), "HTTP 403", id="the platform refused the token"),
        pytest.param("hang", "timed out after 0.5s", id="no answer"),
    ],
)
def test_the_http_sender_names_why_it_could_not_ask(receiver: LocalServer, reply: object, cause: str) -> None:
    receiver.script = [reply]  # type: ignore[list-item]
    sender = HttpSender(f"{receiver.base_url}/", id_token=lambda _audience: "id-token", timeout_seconds=0.5)
    with pytest.raises(ReportError, match="hold request to the inhibitor") as failed:
        sender.send(HoldRequest(environment="staging", parent=PARENT, status="error"))
    assert cause in str(failed.value)


def test_the_http_sender_without_an_id_token_asks_nothing(receiver: LocalServer) -> None:
    def no_token(_audience: str) -> str:
        raise RuntimeError("metadata server unreachable: http://169.254.169.254/secret-detail")

    with pytest.raises(ReportError, match=r"no ID token \(RuntimeError\)$"):
        HttpSender(f"{receiver.base_url}/", id_token=no_token).send(
            HoldRequest(environment="staging", parent=PARENT, status="error")
        )
    assert receiver.requests == []


def test_the_lambda_inhibitor_opens_the_windows_of_an_asynchronous_event(
    env_file: Path, vigilmon: Vigilmon, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OUTPOST_CONFIG", str(env_file))
    from outpost.runtime.inhibitor import make_inhibitor_handler

    handler = make_inhibitor_handler()
    outcome = handler({"environment": "staging", "parent": "koord-manager-health", "status": "failed"}, None)
    assert [item["check"] for item in outcome["held"]] == ["koord-webhook", "leader-leases", "admission-dry-run"]
    assert [call["monitor_id"] for call in vigilmon.maintenance_calls] == [
        monitor_id(c) for c in ["koord-webhook", "leader-leases", "admission-dry-run"]
    ]
    with pytest.raises(Exception, match="refused"):
        handler({"environment": "prod", "parent": PARENT, "status": "error"}, None)


def _unsigned_jwt(claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def test_the_default_id_token_is_google_auths_for_the_inhibitors_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service_account_key_pem: str, receiver: LocalServer
) -> None:
    """google-auth's own service-account flow, its token endpoint a loopback server: the assertion asks for the
    inhibitor's URI as the audience, and the ID token it returns is what the request carries."""
    audience = f"{receiver.base_url}/"
    issued = _unsigned_jwt({"aud": audience, "exp": int(time.time()) + 3600, "iat": int(time.time())})
    asked: list[dict[str, object]] = []

    def reply(request: Recorded) -> Reply:
        if request.path == "/token":
            assertion = dict(urllib.parse.parse_qsl(request.body.decode()))["assertion"]
            payload = assertion.split(".")[1]
            asked.append(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))
            return 200, {"Content-Type": "application/json"}, json.dumps({"id_token": issued}).encode()
        return 200, {"Content-Type": "application/json"}, b"{}"

    receiver.responder = reply
    adc = tmp_path / "adc.json"
    adc.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "outpost-test",
                "private_key_id": "local-test-key",
                "private_key": service_account_key_pem,
                "client_email": "outpost-staging-run@outpost-test.iam.gserviceaccount.com",
                "client_id": "1234567890",
                "token_uri": f"{receiver.base_url}/token",
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    HttpSender(audience).send(HoldRequest(environment="staging", parent=PARENT, status="error"))
    assert [claims["target_audience"] for claims in asked] == [audience]
    [post] = [request for request in receiver.requests if request.path == "/"]
    assert post.headers["Authorization"] == f"Bearer {issued}"
