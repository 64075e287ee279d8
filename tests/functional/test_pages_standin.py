"""`outpost sandbox pages` against the real Vigilmon stand-in, with no sandbox: an API server outage is one page.

Every check of a small environment (seven critical checks and a warning one, all on a 1-minute schedule) runs at
once on one scaled clock through the tool (`pages.measure`), each monitor in the stand-in as `outpost monitors`
defines it, hold-back through the inhibitor in process. The outcome source stands in for the cluster:
apiserver-health's runs are real (a real HTTPS API server on loopback answering /livez and /readyz, and while
"broken" a closed port: connection refused, the API server outage as a deployed function sees it); the other
checks, whose healthy answers need a whole cluster, are scripted while healthy (a healthy run's ping) and real
while broken (their run against the closed port: a real `error`, whose hold request goes through the real runner).
Proven: with hold-back one page, apiserver-health's, every dependant held back, no notification, and on both
clouds no alarm paging, apiserver-health's error notifying, every dependant's held (a failing dependant's
`flapping`, never held, notifies); without it a page per critical
check and a notification for the warning one; the page's first target says so.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from local_tls import https_server

from outpost import secrets
from outpost.cluster import Cluster, Deadline
from outpost.config import Settings
from outpost.holdback.senders import sender_for
from outpost.runner import run_check
from outpost.runtime.common import CheckUnhealthy, cold_start_settings
from outpost_sandbox import pages
from outpost_sandbox.pki import LocalhostTls
from outpost_sandbox.scheduler import Handler

PARENT = "apiserver-health"
CRITICAL = [
    PARENT,
    "apiserver-triage",
    "koord-manager-health",
    "koord-webhook",
    "kruise-manager-health",
    "leader-leases",
    "admission-dry-run",
]
WARNING = ["kwok-node-consistency"]
PERIOD_SECONDS = 2.0
"""A 1-minute schedule every real second (scale 60): a 180 s grace is 3 real seconds, room for a slow run."""
HEALTHY_BODY = "[+]ping ok\n[+]etcd ok\nreadyz check passed\n"


class Source:
    """The cluster the checks reach: the loopback API server, or (broken) a closed port."""

    def __init__(self, closed_port: int) -> None:
        self.broken = threading.Event()
        self.closed = f"https://127.0.0.1:{closed_port}"

    def cluster(self, settings: Settings, deadline: Deadline) -> Cluster:
        if not self.broken.is_set():
            return Cluster.from_settings(settings.cluster, deadline)
        auth = settings.cluster.auth.model_copy(update={"server": self.closed})
        return Cluster.from_settings(settings.cluster.model_copy(update={"auth": auth}), deadline)

    def handler_for(self, check: str) -> Handler:
        settings = cold_start_settings(check)
        hold = sender_for(settings, "local")
        heartbeat = settings.checks[check].heartbeat
        assert heartbeat is not None

        def handler(_event: Any, _context: Any) -> dict[str, Any]:
            if check != PARENT and not self.broken.is_set():  # scripted: a healthy run pings
                assert httpx.get(secrets.resolve(heartbeat).reveal(), timeout=5).status_code == 200
                return {"status": "ok", "summary": "scripted healthy"}
            result = run_check(settings, check, hold=hold, cluster_factory=self.cluster, counted=True)
            if not result.status.healthy:
                raise CheckUnhealthy(result.model_dump(mode="json"))
            return {"status": result.status.value, "summary": result.summary}

        return handler


@pytest.fixture
def api_server(pki: LocalhostTls) -> Iterator[str]:
    with https_server(pki, lambda _request: (200, "text/plain", HEALTHY_BODY)) as (url, _seen):
        yield url


@pytest.fixture
def base(api_server: str, pki: LocalhostTls, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("PAGES_TEST_TOKEN", "sa-token-not-used-for-anything")
    return {
        "environment": "pagestest",
        "cluster": {
            "name": "loopback",
            "auth": {
                "mode": "token",
                "server": api_server,
                "token": "env:PAGES_TEST_TOKEN",
                "ca_file": str(pki.ca_file),
            },
            "connect_timeout_seconds": 1,
            "read_timeout_seconds": 1,
            "deadline_seconds": 5,
        },
        "heartbeat": {"timeout_seconds": 2, "retries": 0},
        "checks": {
            check: {"schedule_minutes": 1, "heartbeat": f"env:PAGES_TEST_HEARTBEAT_{index}"}
            for index, check in enumerate([*CRITICAL, *WARNING])
        },
    }


def measure(base: dict[str, Any], tmp_path: Path, closed_port: int, hold_back: bool) -> pages.FaultRecord:
    source = Source(closed_port)
    driver = pages.Driver("apiserver-down", None, (PARENT, "apiserver-triage"), source.broken.set, source.broken.clear)
    return pages.measure(
        driver,
        base,
        tmp_path / ("held" if hold_back else "unheld"),
        period_seconds=PERIOD_SECONDS,
        hold_back=hold_back,
        handler_for=source.handler_for,
    )


def test_an_unreachable_api_server_pages_once_and_holds_every_dependant_back(
    base: dict[str, Any], tmp_path: Path, closed_port: int
) -> None:
    record = measure(base, tmp_path, closed_port, hold_back=True)
    tally = pages.tally(record)
    shown = yaml.safe_dump(record.as_json()["events"])
    assert record.unhealthy_before == (), shown
    assert [alert.check for alert in tally.pages] == [PARENT], shown
    assert tally.notifications == (), shown
    assert set(tally.held_back) == {*CRITICAL, *WARNING} - {PARENT}
    assert tally.silent_at_heal == ()
    assert tally.unresolved == ()
    assert tally.first_page_within_model, (tally.first_page_seconds, tally.model_seconds)
    # The apiserver-health runs were real errors (connection refused), and so the cloud's error alarms notify.
    failing = [run for run in record.runs if run.check == PARENT and record.broke_at <= run.started_at]
    assert failing
    assert any("connection refused" in run.summary for run in failing)
    # ... on both clouds; every dependant's failed or error alarm reached ALARM and was held back. A dependant
    # that fails (apiserver-triage judges the API server) notifies `flapping`, which is never held
    # (alerting.HELD_RULES); nothing else acts, and nothing pages.
    for cloud in ("aws", "gcp"):
        notified = tally.cloud[cloud]["notify"]
        assert tally.cloud[cloud]["page"] == (), cloud
        assert f"{PARENT} error" in notified, cloud
        assert all(item == f"{PARENT} error" or item.endswith(" flapping") for item in notified), (cloud, notified)
        assert {item.split()[0] for item in tally.cloud[cloud]["held"]} == {*CRITICAL, *WARNING} - {PARENT}, cloud
    page = pages.render([record], [], command="outpost sandbox pages --fault apiserver-down", generated_at="now")
    assert (
        "(API server down: one page, not one per check) | measured, every fault whose checks all depend on one of "
        "them | yes | 1 of 1 at most one page, the root's; apiserver-down 1 page(s): `apiserver-health` |" in page
    )


def test_without_hold_back_every_monitor_alerts(base: dict[str, Any], tmp_path: Path, closed_port: int) -> None:
    record = measure(base, tmp_path, closed_port, hold_back=False)
    tally = pages.tally(record)
    assert sorted(alert.check for alert in tally.pages) == sorted(CRITICAL)
    assert [alert.check for alert in tally.notifications] == WARNING
    assert tally.held_back == ()
    assert record.held == ()
    assert tally.unresolved == ()
    page = pages.render([record], [], command="outpost sandbox pages --no-hold-back", generated_at="now")
    assert (
        "(API server down: one page, not one per check) | measured, every fault whose checks all depend on one of "
        "them | **NO** |" in page
    )


def test_the_command_renders_saved_records_with_the_evaluated_patterns(
    base: dict[str, Any],
    tmp_path: Path,
    closed_port: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--from-records` writes the page from a records file, with the patterns replayed through the stand-in."""
    record = measure(base, tmp_path, closed_port, hold_back=True)
    saved = tmp_path / "records.json"
    command = "outpost sandbox pages --fault apiserver-down --output docs/pages.md"
    saved.write_text(json.dumps({"command": command, "failed": [], "records": [record.as_json()]}))
    output = tmp_path / "pages.md"
    parser = argparse.ArgumentParser()
    pages.register(parser.add_subparsers())
    args = parser.parse_args(
        ["pages", "--state-dir", str(tmp_path / "sbx"), "--from-records", str(saved), "--output", str(output)]
    )
    assert args.func(args) == 0  # every target holds
    page = output.read_text()
    assert f"Generated by `{command}` on " in page
    assert "| no alert for one transient failed run | evaluated" in page
    assert "| apiserver-health | two failed runs in three | - | 180 | 180 | 275 |" in page
    # --resume of the same command with every fault recorded breaks nothing (no sandbox is up) and writes the
    # page; the records of another command are refused.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    same = ["--fault", "apiserver-down", "--output", "docs/pages.md", "--resume", "--records", str(saved)]
    args = parser.parse_args(["pages", "--state-dir", str(tmp_path / "sbx"), *same])
    assert args.func(args) == 0
    assert "### `apiserver-down`" in (tmp_path / "docs" / "pages.md").read_text()
    other = parser.parse_args(["pages", "--state-dir", str(tmp_path / "sbx"), "--resume", "--records", str(saved)])
    assert other.func(other) == 2
    # --again measures a recorded fault once more: it needs the sandbox (none is up), and goes only with --resume.
    again = parser.parse_args(["pages", "--state-dir", str(tmp_path / "sbx"), *same, "--again", "apiserver-down"])
    assert again.func(again) == 1
    assert "no sandbox up" in capsys.readouterr().err
    alone = parser.parse_args(["pages", "--state-dir", str(tmp_path / "sbx"), "--again", "apiserver-down"])
    assert alone.func(alone) == 2
    unknown = parser.parse_args(["pages", "--state-dir", str(tmp_path / "sbx"), *same, "--again", "no-such-fault"])
    assert unknown.func(unknown) == 64
