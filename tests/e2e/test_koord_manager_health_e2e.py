"""koord-manager-health end to end: the real koord-manager pods (both replicas) through the real pod proxy, as the
probe.

Healthy → ok, each pod's `/readyz` answering 200 `ok`, exactly one ping. Asked at the metrics port instead
(`port: 8080`, `paths: [/metrics]`), every pod answers 200 with a body that is not `ok`: failed by default
(a 200 from something else on the port is not readiness), ok with `expect_body: null` (status code alone).
The manager down, frozen or scaled to 0 is the fault catalogue's (test_fault_catalogue_e2e.py); the runtime
adapters' answer to it is test_runtimes_koordinator_e2e.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from managers_e2e import heartbeat_env, run_once, write_config

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "koord-manager-health"
NS = "koordinator-system"
REPLICAS = 2  # the koord-manager Deployment of Koordinator's config/, as the sandbox installs it
METRICS = {"port": 8080, "paths": ["/metrics"]}


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        monkeypatch.setenv(heartbeat_env(CHECK), running.url_for(CHECK))
        yield running


def manager_pods(sandbox: SandboxInfo) -> list[str]:
    out = sandbox.kubectl("get", "pods", "-n", NS, "-l", "koord-app=koord-manager", "-o", "name")
    return sorted(line.removeprefix("pod/") for line in out.stdout.split())


def test_healthy_is_ok_and_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_once(write_config(tmp_path, sandbox, CHECK), CHECK)
    assert result.status is Status.OK, result.errors
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1
    pods = manager_pods(sandbox)
    assert len(pods) == REPLICAS
    assert result.details["paths"] == ["/readyz"]
    assert sorted(result.details["pods"]) == pods
    for outcomes in result.details["pods"].values():
        assert [(o["endpoint"], o["status_code"]) for o in outcomes] == [(":8000/readyz", 200)]


def test_another_body_fails_unless_judged_by_status_code_only(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    pods = manager_pods(sandbox)
    by_body = run_once(write_config(tmp_path, sandbox, CHECK, METRICS), CHECK)
    assert by_body.status is Status.FAILED, by_body.summary
    assert [line.partition(": ")[0] for line in by_body.errors] == [f"pod {NS}/{pod} :8080/metrics" for pod in pods]
    assert all("HTTP 200 with body " in line and line.endswith("(want 'ok')") for line in by_body.errors)
    by_code = run_once(write_config(tmp_path, sandbox, CHECK, {**METRICS, "expect_body": None}), CHECK)
    assert by_code.status is Status.OK, by_code.errors
    assert receiver.pings_for(CHECK) == 1  # the status-code run's only
