"""A Koordinator check through both runtime adapters against the real sandbox: `koord-manager-health`'s own
entry module (`functions/koord_manager_health/main.py`), imported as Lambda imports it and served by
functions-framework as Cloud Functions serves it.

Healthy → the scheduled Lambda run returns ok and the HTTP target answers 200, one ping each; koord-manager down
(`manager-down`: its processes killed and kept down) → the scheduled run raises, the HTTP target answers 503 naming
the manager pods, and nobody pings.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from check_runs import CheckRuns, Receiver
from runtime_entry import lambda_module, scheduled, served_http_target

from outpost_sandbox import faults

if TYPE_CHECKING:
    from conftest import SandboxInfo

CHECK = "koord-manager-health"
ENTRY = Path(__file__).resolve().parents[2] / "functions" / "koord_manager_health" / "main.py"


@pytest.fixture
def gcf_url(runs: CheckRuns) -> Iterator[str]:
    """The check deployed (OUTPOST_CONFIG, its heartbeat) and its entry module served by functions-framework."""
    runs.deployed(CHECK)
    with served_http_target(ENTRY) as url:
        yield url


def test_koord_manager_health_through_lambda_and_functions_framework(
    gcf_url: str, sandbox: SandboxInfo, receiver: Receiver
) -> None:
    module = lambda_module(ENTRY)
    healthy_schedule = scheduled(module)
    healthy_http = httpx.post(gcf_url, json={}, timeout=60)
    assert healthy_schedule["raised"] is False
    assert healthy_schedule["status"] == "ok", healthy_schedule.get("errors")
    assert healthy_http.status_code == 200
    assert healthy_http.json()["status"] == "ok"
    assert receiver.pings_for(CHECK) == 2

    faults.break_fault("manager-down", target="koord-manager", state_dir=sandbox.state_dir)
    try:
        broken_schedule = scheduled(module)
        broken_http = httpx.post(gcf_url, json={}, timeout=60)
    finally:
        faults.heal("manager-down", state_dir=sandbox.state_dir)
    assert broken_schedule["raised"] is True
    assert broken_schedule["status"] == "failed"
    assert broken_http.status_code == 503
    body = broken_http.json()
    assert body["status"] == "failed"
    assert any(line.startswith("pod koordinator-system/koord-manager-") for line in body["errors"]), body["errors"]
    assert receiver.pings_for(CHECK) == 2  # the healthy runs' only
