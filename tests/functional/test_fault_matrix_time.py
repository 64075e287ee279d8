"""The fault matrix, time class: a clock read as upstream reads it, failing closed (issue 20, item 2).

Each case serves a captured state moved to the present, with one timestamp edited (a Lease or NodeMetric in the
future, a time with no zone), to the real `outpost run CHECK --json` in a child process. It must give the right
status and exit code, name object and skew, ping only when healthy and print no credential; a renewal a few
seconds ahead is the control, ok and pinged, proving the rig can reach a healthy verdict.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from child_run import ChildOutcome, assert_bounded, child_environment, run_cli
from local_server import LocalServer
from served_api import ServedApi

from kit import node_fixtures
from kit.fake_cluster import FakeApiServer
from kit.managers import load as load_managers
from outpost.result import Status
from outpost_sandbox.pki import LocalhostTls

API_TOKEN = "sa-time-Gq7Lw2Xe9Rb4"
HEARTBEAT_TOKEN = "hb-time-Vn3Kd8Pz1Ty6"
DEADLINE = 5.0
_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$")


def moved(document: Any, delta: timedelta) -> Any:
    """`document` with every RFC 3339 UTC time moved by `delta`, keeping its precision (Time or MicroTime)."""
    if isinstance(document, dict):
        return {key: moved(value, delta) for key, value in document.items()}
    if isinstance(document, list):
        return [moved(item, delta) for item in document]
    if isinstance(document, str) and (match := _TIME.match(document)):
        fraction = match.group(2) or ""
        instant = datetime.strptime(match.group(1) + (fraction or ".0"), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC)
        shifted = instant + delta
        text = shifted.strftime("%Y-%m-%dT%H:%M:%S")
        return f"{text}{shifted.strftime('.%f')[: len(fraction)] if fraction else ''}Z"
    return document


def rfc3339(instant: datetime, micro: bool = True) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Case:
    name: str
    check: str
    objects: Callable[[datetime], list[dict[str, Any]]]
    """The cluster's objects, given the present."""
    status: Status
    line: str
    """A regex one of the result's error lines (or, for ok, its summary) must match."""
    params: dict[str, Any] | None = None


def _managers(now: datetime) -> list[dict[str, Any]]:
    state = load_managers("healthy")
    objects: list[dict[str, Any]] = moved(state.objects, now - state.captured_at)
    return objects


def _lease(objects: list[dict[str, Any]], name: str, **spec: Any) -> list[dict[str, Any]]:
    objects = copy.deepcopy(objects)
    lease = next(o for o in objects if o["kind"] == "Lease" and o["metadata"]["name"] == name)
    lease["spec"].update(spec)
    return objects


def _leader(name: str, ahead: timedelta | None, text: str | None = None) -> Callable[[datetime], list[dict[str, Any]]]:
    def objects(now: datetime) -> list[dict[str, Any]]:
        renewed = text if text is not None else rfc3339(now + (ahead or timedelta()))
        return _lease(_managers(now), name, renewTime=renewed)

    return objects


def _nodes(
    edit: Callable[[list[dict[str, Any]], list[dict[str, Any]], datetime], None] | None = None,
) -> Callable[[datetime], list[dict[str, Any]]]:
    def objects(now: datetime) -> list[dict[str, Any]]:
        state = "healthy"
        delta = now - node_fixtures.captured_at(state)
        documents = {name: moved(node_fixtures.document(state, name), delta) for name in node_fixtures.DOCUMENTS}
        if edit is not None:
            edit(documents["node_leases"], documents["nodemetrics"], now)
        return list(node_fixtures.serve_documents(documents).objects.values())

    return objects


def _node_lease_ahead(ahead: timedelta) -> Callable[[list[dict[str, Any]], list[dict[str, Any]], datetime], None]:
    def edit(leases: list[dict[str, Any]], _metrics: list[dict[str, Any]], now: datetime) -> None:
        leases[0]["spec"]["renewTime"] = rfc3339(now + ahead)

    return edit


def _node_lease_zoneless(leases: list[dict[str, Any]], _metrics: list[dict[str, Any]], now: datetime) -> None:
    leases[0]["spec"]["renewTime"] = now.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _metric_ahead(ahead: timedelta) -> Callable[[list[dict[str, Any]], list[dict[str, Any]], datetime], None]:
    def edit(_leases: list[dict[str, Any]], metrics: list[dict[str, Any]], now: datetime) -> None:
        metrics[0]["status"]["updateTime"] = rfc3339(now + ahead, micro=False)

    return edit


def _metric_zoneless(_leases: list[dict[str, Any]], metrics: list[dict[str, Any]], now: datetime) -> None:
    metrics[0]["status"]["updateTime"] = now.strftime("%Y-%m-%dT%H:%M:%S")


ALL_NODES = {"nodes": {"classes": ["real", "fake"]}}
KOORD = "koordinator-system/koordinator-manager"
KRUISE = "kruise-system/kruise-manager"
CASES = [
    Case(
        "leader lease renewed 5 s ahead (within the allowance): control",
        "leader-leases",
        _leader("koordinator-manager", timedelta(seconds=5)),
        Status.OK,
        r".",
    ),
    Case(
        "leader lease renewed a year ahead",
        "leader-leases",
        _leader("koordinator-manager", timedelta(days=365)),
        Status.FAILED,
        rf"^lease {KOORD}: observed renewTime 3153\d{{4}}(\.\d)? s in the future \(want at most 10 s "
        r"ahead of this probe's clock",
    ),
    Case(
        "leader lease renewed an hour ahead",
        "leader-leases",
        _leader("kruise-manager", timedelta(hours=1)),
        Status.FAILED,
        rf"^lease {KRUISE}: observed renewTime 3[56]\d\d(\.\d)? s in the future",
    ),
    Case(
        "leader lease renewed 30 s ahead",
        "leader-leases",
        _leader("kruise-manager", timedelta(seconds=30)),
        Status.FAILED,
        rf"^lease {KRUISE}: observed renewTime (2\d|30)(\.\d)? s in the future",
    ),
    Case(
        "leader lease renewTime without a zone",
        "leader-leases",
        _leader("koordinator-manager", None, text="2026-12-04T13:30:14.053210"),
        Status.ERROR,
        r"spec\.renewTime: Input should have timezone info",
    ),
    Case(
        "node lease renewed a day ahead",
        "kwok-node-consistency",
        _nodes(_node_lease_ahead(timedelta(days=1))),
        Status.FAILED,
        r"renewTime 86[34]\d\d(\.\d)? s in the future",
    ),
    Case(
        "node lease renewTime without a zone",
        "kwok-node-consistency",
        _nodes(_node_lease_zoneless),
        Status.ERROR,
        r"spec\.renewTime: Input should have timezone info",
    ),
    Case(
        "NodeMetric updated a day ahead",
        "nodemetric-freshness",
        _nodes(_metric_ahead(timedelta(days=1))),
        Status.FAILED,
        r"updateTime 86[34]\d\d(\.\d)? s in the future",
        ALL_NODES,
    ),
    Case(
        "NodeMetric updateTime without a zone",
        "nodemetric-freshness",
        _nodes(_metric_zoneless),
        Status.ERROR,
        r"status\.updateTime: Input should have timezone info",
        ALL_NODES,
    ),
]


def run_case(case: Case, pki: LocalhostTls, receiver: LocalServer, tmp: Path) -> tuple[ChildOutcome, dict[str, Any]]:
    now = datetime.now(UTC)
    api = FakeApiServer().add_all(case.objects(now))
    check: dict[str, Any] = {"heartbeat": "env:TM_HEARTBEAT"}
    if case.params:
        check["params"] = case.params
    config = tmp / "time.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "environment": "fault-matrix-time",
                "cluster": {
                    "name": "captured",
                    "deadline_seconds": DEADLINE,
                    "auth": {
                        "mode": "token",
                        "server": "https://127.0.0.1:1",
                        "token": "env:TM_API_TOKEN",
                        "ca_file": str(pki.ca_file),
                    },
                },
                "checks": {case.check: check},
            }
        )
    )
    with ServedApi(api, pki.cert_file, pki.key_file) as served:
        text = config.read_text().replace("https://127.0.0.1:1", served.url)
        config.write_text(text)
        environment = child_environment(
            {"TM_API_TOKEN": API_TOKEN, "TM_HEARTBEAT": f"{receiver.base_url}/api/heartbeat/{HEARTBEAT_TOKEN}"}
        )
        outcome = run_cli(
            ["run", case.check, "--config", str(config), "--json"], env=environment, timeout=DEADLINE + 30
        )
    results = json.loads(outcome.stdout) if outcome.stdout.strip().startswith("[") else []
    assert len(results) == 1, outcome.output[-2000:]
    return outcome, results[0]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_time_read_fails_closed(case: Case, pki: LocalhostTls, receiver: LocalServer, tmp_path: Path) -> None:
    outcome, result = run_case(case, pki, receiver, tmp_path)
    assert_bounded(outcome, DEADLINE, secrets=(API_TOKEN, HEARTBEAT_TOKEN))
    assert result["status"] == case.status.value, result
    assert outcome.returncode == case.status.exit_code
    lines = result.get("errors") or []
    if case.status is Status.OK:
        assert [r.path for r in receiver.requests] == [f"/api/heartbeat/{HEARTBEAT_TOKEN}"], "a healthy run pings"
    else:
        assert any(re.search(case.line, line) for line in lines), lines or result["summary"]
        assert receiver.requests == [], "pinged although the cluster was not observed healthy"
