"""apiserver-health end to end: the real sandbox API server, the probe's own identity, a real receiver.

Healthy → ok and exactly one ping, with the probe's kubeconfig and with its token; a wrong token → error, no
ping; API server stopped → error (not observed, never failed), exit status 2 from the CLI, no ping. etcd stopped
is the fault catalogue's (test_fault_catalogue_e2e.py) and the runtime adapters' (test_runtimes_e2e.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest
from check_runs import CheckRuns, broken

from outpost.result import Status

if TYPE_CHECKING:
    from conftest import SandboxInfo

CHECK = "apiserver-health"


def token_auth(sandbox: SandboxInfo, monkeypatch: pytest.MonkeyPatch, token: str) -> dict[str, object]:
    """Bearer-token auth with the token in an environment variable, as a deployment references it."""
    monkeypatch.setenv("E2E_PROBE_TOKEN", token)
    return {"mode": "token", "server": sandbox.server, "token": "env:E2E_PROBE_TOKEN", "ca_file": str(sandbox.ca_path)}


def wait_ready(sandbox: SandboxInfo, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = sandbox.kubectl("get", "--raw", "/readyz", check=False, timeout=10)
        if proc.returncode == 0:
            return
        time.sleep(1)
    pytest.fail("sandbox API server did not become ready again after the fault was healed")


def test_healthy_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK)
    readyz = {c["name"] for c in result.details["readyz"]["checks"]}
    assert {"etcd", "ping", "informer-sync"} <= readyz
    assert all(c["ok"] for c in result.details["readyz"]["checks"])


def test_token_auth_with_probe_identity(runs: CheckRuns, monkeypatch: pytest.MonkeyPatch) -> None:
    auth = token_auth(runs.sandbox, monkeypatch, runs.sandbox.probe_token)
    result = runs.run(runs.config(CHECK, auth=auth), CHECK)
    assert result.status is Status.OK, result.errors
    assert runs.receiver.pings_for(CHECK) == 1


def test_wrong_token_is_error_and_silent(runs: CheckRuns, monkeypatch: pytest.MonkeyPatch) -> None:
    auth = token_auth(runs.sandbox, monkeypatch, "not-a-valid-token")
    result = runs.run(runs.config(CHECK, auth=auth), CHECK)
    assert result.status is Status.ERROR
    assert "HTTP 401" in result.summary
    assert "not-a-valid-token" not in result.model_dump_json()
    runs.assert_silent(result, CHECK)


def test_cli_json_against_sandbox(sandbox: SandboxInfo) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "outpost.cli", "run", CHECK, "--kubeconfig", str(sandbox.probe_kubeconfig), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert set(result) == {"check", "status", "summary", "errors", "next_steps", "details", "duration_ms", "reported"}
    assert (result["status"], result["next_steps"]) == ("ok", [])
    assert result["reported"] is False


def test_apiserver_down_is_error_exit_2_and_silent(runs: CheckRuns) -> None:
    config = runs.config(CHECK)
    try:
        with broken("apiserver-down", runs.sandbox.state_dir):
            code, result = runs.cli(config, CHECK)
    finally:
        wait_ready(runs.sandbox)
    assert (code, result["status"]) == (2, "error"), result
    assert "connection refused" in result["summary"]
    assert runs.receiver.pings_for(CHECK) == 0
