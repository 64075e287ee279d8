"""The runner's guarantees, with real credentials plumbing and real local servers.

A hanging exec plugin cannot hold the run past its deadline and a failing one is `error` naming the credentials;
an undeliverable heartbeat is `error` without the URL; after a stop nothing is pinged (mid-run, during backoff,
before start), and a plugin registered after the stop is killed at once.
"""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_server import LocalServer
from local_tls import https_server

from kit.kubeconfigs import exec_user, write_kubeconfig
from outpost import interrupt
from outpost.config import parse_settings
from outpost.result import Result, Status
from outpost.runner import run_check
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver
from outpost_sandbox.pki import LocalhostTls


def exec_kubeconfig(tmp_path: Path, server: str, script: str, ca_file: Path | None = None) -> Path:
    plugin = tmp_path / "credential-plugin.sh"
    plugin.write_text("#!/bin/sh\n" + script)
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    return write_kubeconfig(tmp_path / "kubeconfig", server, exec_user(plugin), ca_file=ca_file)


def settings_for(kubeconfig: Path, deadline: float = 2.0, heartbeat_env: str | None = None):  # type: ignore[no-untyped-def]
    check: dict[str, object] = {"heartbeat": f"env:{heartbeat_env}"} if heartbeat_env else {}
    return parse_settings(
        {
            "environment": "t",
            "cluster": {
                "name": "c",
                "auth": {"mode": "kubeconfig", "path": str(kubeconfig)},
                "deadline_seconds": deadline,
            },
            "heartbeat": {"timeout_seconds": 1, "retries": 0},
            "checks": {"apiserver-health": check},
        }
    )


TOKEN_OUTPUT = json.dumps(
    {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": "exec-issued-token"},
    }
)


def test_hanging_credential_plugin_is_bounded_by_the_deadline(tmp_path: Path) -> None:
    kubeconfig = exec_kubeconfig(tmp_path, "https://127.0.0.1:1", "sleep 30\n")
    started = time.monotonic()
    result = run_check(settings_for(kubeconfig, deadline=1.5), "apiserver-health", log=False)
    assert time.monotonic() - started < 8
    assert result.status is Status.ERROR
    assert "no credentials within the deadline of 1.5 s (the plugin was killed)" in result.summary
    assert result.reported is False
    assert [step.failure for step in result.next_steps] == ["no-credential"]


def test_failing_credential_plugin_is_an_auth_error(tmp_path: Path) -> None:
    kubeconfig = exec_kubeconfig(tmp_path, "https://127.0.0.1:1", "echo 'sso session expired' >&2\nexit 1\n")
    result = run_check(settings_for(kubeconfig), "apiserver-health", log=False)
    assert result.status is Status.ERROR
    assert result.summary.startswith("kubeconfig credentials: ")
    (step,) = result.next_steps
    assert step.failure == "no-credential"
    assert step.command.startswith("outpost run apiserver-health --env ")


HEALTHY_BODY = "[+]ping ok\n[+]etcd ok\nreadyz check passed\n"


def test_undeliverable_heartbeat_turns_ok_into_error(
    tmp_path: Path, pki: LocalhostTls, monkeypatch: pytest.MonkeyPatch
) -> None:
    with HeartbeatReceiver() as receiver, https_server(pki, lambda _r: (200, "text/plain", HEALTHY_BODY)) as (url, _):
        revoked = receiver.url_for("apiserver-health") + "-revoked"  # the receiver answers 404
        monkeypatch.setenv("RUNNER_TEST_HEARTBEAT", revoked)
        kubeconfig = exec_kubeconfig(tmp_path, url, f"echo '{TOKEN_OUTPUT}'\n", pki.ca_file)
        result = run_check(
            settings_for(kubeconfig, heartbeat_env="RUNNER_TEST_HEARTBEAT"), "apiserver-health", log=False
        )
    assert result.status is Status.ERROR
    assert "observed ok but the heartbeat was not delivered" in result.summary
    assert "404" in result.summary
    assert result.details["observed_status"] == "ok"
    assert revoked not in result.model_dump_json()
    assert receiver.pings_for("apiserver-health") == 0
    assert [step.failure for step in result.next_steps] == ["not-delivered"]


def run_with_exec_token(
    tmp_path: Path, pki: LocalhostTls, monkeypatch: pytest.MonkeyPatch, respond: Any
) -> tuple[Result, int]:
    """apiserver-health against `respond` behind TLS, its token from an exec plugin, pinging a real receiver:
    the result and the pings taken."""
    with HeartbeatReceiver() as receiver, https_server(pki, respond) as (url, _):
        monkeypatch.setenv("RUNNER_TEST_HEARTBEAT", receiver.url_for("apiserver-health"))
        kubeconfig = exec_kubeconfig(tmp_path, url, f"echo '{TOKEN_OUTPUT}'\n", pki.ca_file)
        result = run_check(
            settings_for(kubeconfig, heartbeat_env="RUNNER_TEST_HEARTBEAT"), "apiserver-health", log=False
        )
        return result, receiver.pings_for("apiserver-health")


def test_exec_plugin_token_reaches_the_server_and_ok_pings(
    tmp_path: Path, pki: LocalhostTls, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen_auth: list[str] = []

    def respond(request):  # type: ignore[no-untyped-def]
        seen_auth.append(request.headers.get("Authorization", ""))
        return 200, "text/plain", HEALTHY_BODY

    result, pings = run_with_exec_token(tmp_path, pki, monkeypatch, respond)
    assert result.status is Status.OK, result.summary
    assert result.reported is True
    assert pings == 1
    assert seen_auth == ["Bearer exec-issued-token"] * 2


# -- a stop (SIGINT/SIGTERM): nothing is pinged after it ------------------------------------------------------


@pytest.fixture
def stop_reset() -> Iterator[None]:
    """These tests ask for a stop in this very process: forget it afterwards."""
    interrupt.reset()
    yield
    interrupt.reset()


def test_a_stop_during_the_observation_means_no_ping(
    tmp_path: Path, pki: LocalhostTls, stop_reset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def respond(request):  # type: ignore[no-untyped-def]
        if request.path.startswith("/readyz"):
            interrupt.request_stop()  # the signal lands while the API server answers (healthy)
        return 200, "text/plain", HEALTHY_BODY

    result, pings = run_with_exec_token(tmp_path, pki, monkeypatch, respond)
    assert result.status is Status.ERROR
    assert result.summary == ("apiserver-health: observed ok but the run was stopped before its heartbeat; not pinged")
    assert result.details["observed_status"] == "ok"
    assert result.reported is False
    assert pings == 0


def test_a_stop_during_the_heartbeat_backoff_ends_the_retries(
    pki: LocalhostTls, stop_reset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first attempt answers 500; the stop comes during the backoff: no retry starts, the wait is cut."""
    receiver = LocalServer(script=[(500, {}, b"busy")])
    receiver.start()
    try:
        with https_server(pki, lambda _r: (200, "text/plain", HEALTHY_BODY)) as (url, _):
            monkeypatch.setenv("RUNNER_TEST_TOKEN", "sa-runner-token-value")
            monkeypatch.setenv("RUNNER_TEST_HEARTBEAT", f"{receiver.base_url}/api/heartbeat/runner")
            settings = parse_settings(
                {
                    "environment": "t",
                    "cluster": {
                        "name": "c",
                        "auth": {
                            "mode": "token",
                            "server": url,
                            "token": "env:RUNNER_TEST_TOKEN",
                            "ca_file": str(pki.ca_file),
                        },
                    },
                    "heartbeat": {"timeout_seconds": 1, "retries": 3, "backoff_seconds": 5},
                    "checks": {"apiserver-health": {"heartbeat": "env:RUNNER_TEST_HEARTBEAT"}},
                }
            )
            timer = threading.Timer(0.5, interrupt.request_stop)
            timer.start()
            started = time.monotonic()
            result = run_check(settings, "apiserver-health", log=False)
            elapsed = time.monotonic() - started
            timer.join()
    finally:
        receiver.stop()
    assert len(receiver.requests) == 1, "a heartbeat attempt started after the stop"
    assert elapsed < 2.0, f"the backoff was not cut short by the stop ({elapsed:.1f} s)"
    assert result.status is Status.ERROR
    assert "stopped before its heartbeat; not pinged" in result.summary


def test_a_run_asked_to_stop_before_it_starts_observes_nothing(pki: LocalhostTls, stop_reset: None) -> None:
    with https_server(pki, lambda _r: (200, "text/plain", HEALTHY_BODY)) as (url, seen):
        settings = parse_settings(
            {
                "environment": "t",
                "cluster": {
                    "name": "c",
                    "auth": {"mode": "token", "server": url, "token": "env:RUNNER_UNSET", "ca_file": str(pki.ca_file)},
                },
                "checks": {"apiserver-health": {}},
            }
        )
        interrupt.request_stop()
        result = run_check(settings, "apiserver-health", log=False)
    assert result.status is Status.ERROR
    assert result.summary == "apiserver-health: the run was stopped before it started; nothing was observed"
    assert seen == []


def test_a_plugin_started_after_a_stop_is_killed_at_once(stop_reset: None) -> None:
    interrupt.request_stop()
    process = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        with interrupt.tracked(process):
            assert process.wait(timeout=2) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
