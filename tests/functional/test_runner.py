"""The runner's guarantees, with real credentials plumbing and real local servers.

- a credential plugin that hangs (here: a kubeconfig exec plugin that sleeps) cannot hold the run past
  its deadline: the run ends as `error` naming the deadline, and nothing is pinged;
- an exec plugin that fails is `error` naming the kubeconfig credentials;
- a healthy observation whose heartbeat cannot be delivered is `error`, and the URL is not in it.
"""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest
import yaml
from local_tls import https_server

from outpost.config import parse_settings
from outpost.result import Status
from outpost.runner import run_check
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver
from outpost_sandbox.pki import LocalhostTls, localhost_tls


def exec_kubeconfig(tmp_path: Path, server: str, script: str, ca_file: Path | None = None) -> Path:
    plugin = tmp_path / "credential-plugin.sh"
    plugin.write_text("#!/bin/sh\n" + script)
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    cluster: dict[str, object] = {"server": server}
    if ca_file:
        cluster["certificate-authority"] = str(ca_file)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": cluster}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                   "command": str(plugin), "interactiveMode": "Never"}}}],
    }))
    return path


def settings_for(kubeconfig: Path, deadline: float = 2.0, heartbeat_env: str | None = None):  # type: ignore[no-untyped-def]
    check: dict[str, object] = {"heartbeat": f"env:{heartbeat_env}"} if heartbeat_env else {}
    return parse_settings({
        "environment": "t",
        "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": str(kubeconfig)},
                    "deadline_seconds": deadline},
        "heartbeat": {"timeout_seconds": 1, "retries": 0},
        "checks": {"apiserver-health": check},
    })


TOKEN_OUTPUT = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                           "status": {"token": "exec-issued-token"}})


def test_hanging_credential_plugin_is_bounded_by_the_deadline(tmp_path: Path) -> None:
    kubeconfig = exec_kubeconfig(tmp_path, "https://127.0.0.1:1", "sleep 30\n")
    started = time.monotonic()
    result = run_check(settings_for(kubeconfig, deadline=1.5), "apiserver-health", log=False)
    assert time.monotonic() - started < 8
    assert result.status is Status.ERROR
    assert "no credentials within the deadline of 1.5 s (the plugin was killed)" in result.summary
    assert result.reported is False


def test_failing_credential_plugin_is_an_auth_error(tmp_path: Path) -> None:
    kubeconfig = exec_kubeconfig(tmp_path, "https://127.0.0.1:1", "echo 'sso session expired' >&2\nexit 1\n")
    result = run_check(settings_for(kubeconfig), "apiserver-health", log=False)
    assert result.status is Status.ERROR
    assert result.summary.startswith("kubeconfig credentials: ")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> LocalhostTls:
    return localhost_tls(tmp_path_factory.mktemp("pki"))


HEALTHY_BODY = "[+]ping ok\n[+]etcd ok\nreadyz check passed\n"


def test_undeliverable_heartbeat_turns_ok_into_error(tmp_path: Path, pki: LocalhostTls,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with HeartbeatReceiver() as receiver, https_server(pki, lambda _r: (200, "text/plain", HEALTHY_BODY)) as (url, _):
        revoked = receiver.url_for("apiserver-health") + "-revoked"  # the receiver answers 404
        monkeypatch.setenv("RUNNER_TEST_HEARTBEAT", revoked)
        kubeconfig = exec_kubeconfig(tmp_path, url, f"echo '{TOKEN_OUTPUT}'\n", pki.ca_file)
        result = run_check(settings_for(kubeconfig, heartbeat_env="RUNNER_TEST_HEARTBEAT"), "apiserver-health",
                           log=False)
    assert result.status is Status.ERROR
    assert "observed ok but the heartbeat was not delivered" in result.summary
    assert "404" in result.summary
    assert result.details["observed_status"] == "ok"
    assert revoked not in result.model_dump_json()
    assert receiver.pings_for("apiserver-health") == 0


def test_exec_plugin_token_reaches_the_server_and_ok_pings(tmp_path: Path, pki: LocalhostTls,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    seen_auth: list[str] = []

    def respond(request):  # type: ignore[no-untyped-def]
        seen_auth.append(request.headers.get("Authorization", ""))
        return 200, "text/plain", HEALTHY_BODY

    with HeartbeatReceiver() as receiver, https_server(pki, respond) as (url, _):
        monkeypatch.setenv("RUNNER_TEST_HEARTBEAT", receiver.url_for("apiserver-health"))
        kubeconfig = exec_kubeconfig(tmp_path, url, f"echo '{TOKEN_OUTPUT}'\n", pki.ca_file)
        result = run_check(settings_for(kubeconfig, heartbeat_env="RUNNER_TEST_HEARTBEAT"), "apiserver-health",
                           log=False)
        pings = receiver.pings_for("apiserver-health")
    assert result.status is Status.OK, result.summary
    assert result.reported is True
    assert pings == 1
    assert seen_auth == ["Bearer exec-issued-token"] * 2
