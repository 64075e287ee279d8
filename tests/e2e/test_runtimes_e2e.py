"""The Lambda handler and the functions-framework target, against the real sandbox.

Both adapters must return the same result for the same cluster: healthy → ok and one ping each;
etcd stopped → failed, the scheduled Lambda run raises, the HTTP runs answer 503, and nobody pings.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from check_runs import CheckRuns, Receiver
from runtime_entry import lambda_module, scheduled, served_http_target

from outpost_sandbox import faults
from samples.aws_events import FUNCTION_URL_EVENT

if TYPE_CHECKING:
    from conftest import SandboxInfo

CHECK = "apiserver-health"
ENTRY = Path(__file__).resolve().parents[2] / "functions" / "apiserver_health" / "main.py"
COMPARED = ("check", "status", "environment")


@pytest.fixture
def gcf_url(runs: CheckRuns) -> Iterator[str]:
    """The check deployed (OUTPOST_CONFIG, its heartbeat) and its entry module served by functions-framework."""
    runs.deployed(CHECK)
    with served_http_target(ENTRY) as url:
        yield url


def test_adapters_agree_when_healthy(gcf_url: str, receiver: Receiver) -> None:
    module = lambda_module(ENTRY)
    from_schedule = scheduled(module)
    url_response = module.handler(FUNCTION_URL_EVENT, None)
    gcf_response = httpx.post(gcf_url, json={}, timeout=60)

    assert from_schedule["raised"] is False
    assert from_schedule["status"] == "ok"
    assert from_schedule["reported"] is True
    assert url_response["statusCode"] == 200
    assert gcf_response.status_code == 200
    from_url = json.loads(url_response["body"])
    from_gcf = gcf_response.json()
    for key in COMPARED:
        assert from_schedule[key] == from_url[key] == from_gcf[key]
    assert from_url["details"]["readyz"]["checks"] == from_gcf["details"]["readyz"]["checks"]
    assert receiver.pings_for(CHECK) == 3


def test_adapters_agree_when_etcd_is_down(gcf_url: str, sandbox: SandboxInfo, receiver: Receiver) -> None:
    module = lambda_module(ENTRY)
    faults.break_fault("etcd-down", state_dir=sandbox.state_dir)
    try:
        deadline = time.monotonic() + 60
        from_schedule = scheduled(module)
        while from_schedule["status"] != "failed" and time.monotonic() < deadline:
            time.sleep(2)
            from_schedule = scheduled(module)
        gcf_response = httpx.get(gcf_url, timeout=60)
        url_response = module.handler(FUNCTION_URL_EVENT, None)
    finally:
        faults.heal("etcd-down", state_dir=sandbox.state_dir)
    assert from_schedule["raised"] is True
    assert from_schedule["status"] == "failed"
    assert gcf_response.status_code == 503
    assert url_response["statusCode"] == 503
    assert gcf_response.json()["status"] == "failed"
    assert receiver.pings_for(CHECK) == 0
    ready_deadline = time.monotonic() + 90
    while sandbox.kubectl("get", "--raw", "/readyz", check=False, timeout=10).returncode != 0:
        assert time.monotonic() < ready_deadline, "API server not ready again after etcd restart"
        time.sleep(1)
