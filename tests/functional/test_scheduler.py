"""The scheduler and the Vigilmon stand-in together, on a scaled clock, against a local API server.

apiserver-health's real entry module (functions/apiserver_health/main.py) runs on its schedule as Lambda runs
it; its monitor is the one `outpost monitors` defines; the API server is a real HTTPS server on loopback that
answers healthy, then 500 (the fault), then healthy again. Proven: no alert while healthy, an alert within the
model's worst case (schedule + run + grace) of the fault, a resolve on the first healthy run after it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from local_tls import https_server

from outpost.settings import CONFIG_ENV, load_settings
from outpost.tooling import monitors
from outpost_sandbox.pki import LocalhostTls, localhost_tls
from outpost_sandbox.scheduler import ScaledClock, Scheduler, entry_module
from outpost_sandbox.vigilmon import Vigilmon

CHECK = "apiserver-health"
HEALTHY_BODY = "[+]ping ok\n[+]etcd ok\nreadyz check passed\n"
SCALE = 30.0  # a 1-minute schedule every 2 real seconds


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> LocalhostTls:
    return localhost_tls(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def api_server(pki: LocalhostTls) -> Iterator[tuple[str, threading.Event]]:
    """An API server whose /livez and /readyz answer 500 while the yielded event is set."""
    broken = threading.Event()

    def respond(_request: object) -> tuple[int, str, str]:
        return (500, "text/plain", "[-]etcd failed\n") if broken.is_set() else (200, "text/plain", HEALTHY_BODY)

    with https_server(pki, respond) as (url, _seen):
        yield url, broken


def environment(tmp_path: Path, server: str, pki: LocalhostTls) -> Path:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": str(pki.ca_file)}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "probe-token"}}],
            }
        )
    )
    path = tmp_path / "scheduled.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "environment": "scheduled",
                "cluster": {
                    "name": "c",
                    "auth": {"mode": "kubeconfig", "path": str(kubeconfig)},
                    "deadline_seconds": 5,
                },
                "heartbeat": {"timeout_seconds": 2, "retries": 0},
                "checks": {CHECK: {"heartbeat": "env:SCHEDULER_TEST_HEARTBEAT", "schedule_minutes": 1}},
            }
        )
    )
    return path


def wait_for(done: Callable[[], object], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_the_entry_module_is_the_deployed_one() -> None:
    assert entry_module(CHECK).read_text().count('CHECK = "apiserver-health"') == 1


def test_scaled_clock_reports_real_units() -> None:
    clock = ScaledClock(scale=60, origin=0)
    time.sleep(0.1)
    assert 5.5 <= clock() <= 30
    assert clock.real_seconds(60) == 1


def test_scaled_clock_runs_at_real_time_for_a_while_and_never_jumps() -> None:
    clock = ScaledClock(scale=100, origin=0)
    with clock.real_time():
        assert clock.scale == 1
        before = clock()
        time.sleep(0.2)
        inside = clock() - before
    assert 0.15 <= inside < 2  # real seconds, not a hundred times as many
    assert clock.scale == 100
    after = clock()
    time.sleep(0.1)
    assert clock() - after >= 9  # scaled again, on from where it was
    assert after - before < 5


def test_fault_alerts_within_the_model_and_resolves(
    tmp_path: Path,
    pki: LocalhostTls,
    api_server: tuple[str, threading.Event],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, broken = api_server
    config = environment(tmp_path, url, pki)
    [monitor] = monitors.document(load_settings(config))["monitors"]
    clock = ScaledClock(scale=SCALE)
    with Vigilmon(clock=clock) as vigilmon:
        key = vigilmon.create_monitors({"monitors": [monitor]})[CHECK].key
        monkeypatch.setenv("SCHEDULER_TEST_HEARTBEAT", vigilmon.heartbeat_url(key))
        monkeypatch.setenv(CONFIG_ENV, str(config))
        vigilmon.watch(every_seconds=0.01)
        with Scheduler({CHECK: monitor["interval_seconds"]}, clock=clock) as scheduler:
            wait_for(lambda: len(scheduler.runs_of(CHECK)) >= 4, 15)  # four healthy schedules
            healthy = scheduler.runs_of(CHECK)
            assert all(run.healthy for run in healthy), healthy
            assert vigilmon.pings_for(key) >= 4
            assert vigilmon.events == []

            broke_at = clock()
            broken.set()
            wait_for(lambda: vigilmon.events_for(CHECK, "alert"), 30)
            [alert] = vigilmon.events_for(CHECK, "alert")
            longest_run = max(run.seconds for run in scheduler.runs_of(CHECK))
            worst = monitor["interval_seconds"] + longest_run + monitor["grace_seconds"]
            assert alert.at - broke_at <= worst
            assert alert.at - broke_at > monitor["grace_seconds"]  # the grace is honoured: no early page
            failing = [run for run in scheduler.runs_of(CHECK) if run.started_at >= broke_at]
            assert failing
            assert not any(run.healthy for run in failing)
            assert {run.status for run in failing} == {"failed"}

            healed_at = clock()
            broken.clear()
            wait_for(lambda: vigilmon.events_for(CHECK, "resolve"), 15)
            [resolve] = vigilmon.events_for(CHECK, "resolve")
            assert resolve.at - healed_at <= monitor["interval_seconds"] + longest_run
