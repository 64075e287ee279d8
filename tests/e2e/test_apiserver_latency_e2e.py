"""apiserver-latency end to end (no sandbox fault targets it): the probe identity scrapes the real kube-apiserver's
/metrics twice (it needs `get` on that non-resource URL only), healthy → ok with a p99 per verb and one ping;
thresholds below the observed latency → failed naming the verb, no ping; an interval that does not fit the deadline
is refused by validation."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from check_runs import CheckRuns

from outpost.errors import ConfigError
from outpost.result import Status
from outpost.settings import load_settings

if TYPE_CHECKING:
    from conftest import SandboxInfo

CHECK = "apiserver-latency"


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
def test_healthy_p99_per_verb_is_ok_and_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, {"interval_seconds": 3})
    verbs = result.details["verbs"]
    assert verbs["GET"]["judged"]
    assert verbs["GET"]["quantile_seconds"] <= verbs["GET"]["threshold_seconds"]
    assert not {"WATCH", "CONNECT"} & set(verbs)
    assert result.details["window"].endswith(" s")


@pytest.mark.usefixtures("get_traffic")
def test_thresholds_below_observed_latency_fail_naming_the_verb(runs: CheckRuns) -> None:
    params = {"interval_seconds": 3, "thresholds_seconds": {"GET": 0.000001}, "default_threshold_seconds": None}
    result = runs.probe(CHECK, params)
    assert result.status is Status.FAILED, result.summary
    (line,) = result.errors
    assert line.startswith("apiserver verb GET: observed p99 ")
    assert line.endswith("(want <= 1e-06 s)")
    runs.assert_silent(result, CHECK)


def test_interval_longer_than_the_deadline_is_refused(runs: CheckRuns) -> None:
    config = runs.config(CHECK, {"interval_seconds": 28}, deadline=30)
    with pytest.raises(ConfigError) as refused:
        load_settings(config)
    assert any("interval_seconds 28" in problem for problem in refused.value.problems)
