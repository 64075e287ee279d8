"""apiserver-latency end to end (no sandbox fault targets it): the probe identity scrapes the real kube-apiserver's
/metrics twice (it needs `get` on that non-resource URL only), healthy → ok with a p99 per verb and one ping;
thresholds below the observed latency → failed naming the verb, no ping; an interval that does not fit the deadline
is refused by validation."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from probe_runs import assert_silent, heartbeat_env, run, write_config

from outpost.errors import ConfigError
from outpost.result import Status
from outpost.settings import load_settings
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "apiserver-latency"


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        monkeypatch.setenv(heartbeat_env(CHECK), running.url_for(CHECK))
        yield running


@pytest.fixture
def get_traffic(sandbox: SandboxInfo) -> Iterator[None]:
    """GETs of the probe's own while the check runs: a quiet sandbox may serve none in a 3 s window."""
    stop = threading.Event()

    def keep_getting() -> None:
        while not stop.is_set():
            # A GET the probe's generated RBAC allows (koord-manager-health reads it): a refused request is
            # not timed by the request-duration histogram.
            sandbox.kubectl(
                "get", "deployment", "koord-manager", "-n", "koordinator-system", probe=True, check=False, timeout=10
            )
            stop.wait(0.2)

    worker = threading.Thread(target=keep_getting, daemon=True)
    worker.start()
    yield
    stop.set()
    worker.join(15)


@pytest.mark.usefixtures("get_traffic")
def test_healthy_p99_per_verb_is_ok_and_pings_once(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    result = run(write_config(tmp_path, sandbox.probe_kubeconfig, CHECK, {"interval_seconds": 3}), CHECK)
    assert result.status is Status.OK, result.errors
    verbs = result.details["verbs"]
    assert verbs["GET"]["judged"]
    assert verbs["GET"]["quantile_seconds"] <= verbs["GET"]["threshold_seconds"]
    assert not {"WATCH", "CONNECT"} & set(verbs)
    assert result.details["window"].endswith(" s")
    assert receiver.pings_for(CHECK) == 1


@pytest.mark.usefixtures("get_traffic")
def test_thresholds_below_observed_latency_fail_naming_the_verb(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    params = {"interval_seconds": 3, "thresholds_seconds": {"GET": 0.000001}, "default_threshold_seconds": None}
    result = run(write_config(tmp_path, sandbox.probe_kubeconfig, CHECK, params), CHECK)
    assert result.status is Status.FAILED, result.summary
    (line,) = result.errors
    assert line.startswith("apiserver verb GET: observed p99 ")
    assert line.endswith("(want <= 1e-06 s)")
    assert_silent(result, receiver, CHECK)


def test_interval_longer_than_the_deadline_is_refused(tmp_path: Path, sandbox: SandboxInfo) -> None:
    config = write_config(tmp_path, sandbox.probe_kubeconfig, CHECK, {"interval_seconds": 28}, deadline=30)
    with pytest.raises(ConfigError) as refused:
        load_settings(config)
    assert any("interval_seconds 28" in problem for problem in refused.value.problems)
