"""A Koordinator check through both runtime adapters against the real sandbox: `koord-manager-health`'s own
entry module (`functions/koord_manager_health/main.py`), imported as Lambda imports it and served by
functions-framework as Cloud Functions serves it.

Healthy → the scheduled Lambda run returns ok and the HTTP target answers 200, one ping each; koord-manager
answering 500 (`backend-500` aimed at it) → the scheduled run raises, the HTTP target answers 503 naming the
manager pods, and nobody pings.
"""

from __future__ import annotations

import importlib.util
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import functions_framework
import httpx
import pytest
import yaml
from werkzeug.serving import make_server

from outpost.runtime.common import CheckUnhealthy
from outpost_sandbox import faults
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver
from samples.aws_events import SCHEDULED_EVENT

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "koord-manager-health"
ENTRY = Path(__file__).resolve().parents[2] / "functions" / "koord_manager_health" / "main.py"
_fresh = itertools.count()


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def configured(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver,
               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "koordinator-runtime-e2e.yaml"
    path.write_text(yaml.safe_dump({
        "environment": "koordinator-runtime-e2e",
        "cluster": {"name": "sandbox", "auth": {"mode": "kubeconfig", "path": str(sandbox.probe_kubeconfig)},
                    "deadline_seconds": 20},
        "heartbeat": {"timeout_seconds": 2, "retries": 0},
        "checks": {CHECK: {"heartbeat": "env:KOORD_RUNTIME_E2E_HEARTBEAT"}},
    }))
    monkeypatch.setenv("OUTPOST_CONFIG", str(path))
    monkeypatch.setenv("KOORD_RUNTIME_E2E_HEARTBEAT", receiver.url_for(CHECK))


def lambda_module() -> ModuleType:
    """Import the entry module as Lambda would on a cold start."""
    spec = importlib.util.spec_from_file_location(f"koord_runtime_e2e_entry_{next(_fresh)}", ENTRY)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def gcf_url(configured: None) -> Iterator[str]:
    app = functions_framework.create_app(target="http", source=str(ENTRY))  # type: ignore[no-untyped-call]
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        thread.join(5)


def scheduled(module: ModuleType) -> dict[str, Any]:
    try:
        result: dict[str, Any] = module.handler(SCHEDULED_EVENT, None)
    except CheckUnhealthy as unhealthy:
        return {**unhealthy.result, "raised": True}
    return {**result, "raised": False}


def test_koord_manager_health_through_lambda_and_functions_framework(
        configured: None, gcf_url: str, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    module = lambda_module()
    healthy_schedule = scheduled(module)
    healthy_http = httpx.post(gcf_url, json={}, timeout=60)
    assert healthy_schedule["raised"] is False
    assert healthy_schedule["status"] == "ok", healthy_schedule.get("errors")
    assert healthy_http.status_code == 200
    assert healthy_http.json()["status"] == "ok"
    assert receiver.pings_for(CHECK) == 2

    faults.break_fault("backend-500", target="koord-manager", state_dir=sandbox.state_dir)
    try:
        broken_schedule = scheduled(module)
        broken_http = httpx.post(gcf_url, json={}, timeout=60)
    finally:
        faults.heal("backend-500", state_dir=sandbox.state_dir)
    assert broken_schedule["raised"] is True
    assert broken_schedule["status"] == "failed"
    assert broken_http.status_code == 503
    body = broken_http.json()
    assert body["status"] == "failed"
    assert any(line.startswith("pod koordinator-system/koord-manager-") for line in body["errors"]), body["errors"]
    assert receiver.pings_for(CHECK) == 2  # the healthy runs' only
