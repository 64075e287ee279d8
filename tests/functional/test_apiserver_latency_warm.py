"""apiserver-latency in a warm process (issue 21, "incremental reads"): real runs (`run_check`, settings from a file,
the real `Cluster` over TLS) against a real local HTTPS server whose `/metrics` counts grow with every scrape.

What is proven, with real time: a cold run waits `cold_interval_seconds` between two scrapes and keeps the second;
the next run in the same process takes one scrape, does not wait, and its window is the real gap between its scrape
and the kept one; a kept scrape older than `max_previous_age_seconds`, or kept for another cluster, is not used (the
run is cold again); an API server that restarted between the kept scrape and the new one is judged on what it served
since the restart, its series named in `details.resets`.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_tls import https_server

from outpost.cluster import warm
from outpost.result import Result, Status
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox.pki import LocalhostTls

CHECK = "apiserver-latency"
METRIC = "apiserver_request_duration_seconds"
GET = 'group="",resource="pods",scope="namespace",subresource="",verb="GET",version="v1"'
TOKEN_ENV = "LATENCY_WARM_TOKEN"


class Metrics:
    """`/metrics` of an API server serving 100 fast GETs between two scrapes; `restart()` starts its counters over
    with 10 slow ones (0.5-5 s: p99 over the 1 s threshold). Records when each scrape was answered."""

    def __init__(self) -> None:
        self.fast = 0
        self.slow = 0
        self.answered: list[float] = []
        self._lock = threading.Lock()

    def restart(self) -> None:
        with self._lock:
            self.fast, self.slow = 0, 10

    def __call__(self, request: http.server.BaseHTTPRequestHandler) -> tuple[int, str, str]:
        if request.path != "/metrics":
            return 404, "text/plain", "not found"
        with self._lock:
            self.fast += 100
            fast, total = self.fast, self.fast + self.slow
            self.answered.append(time.monotonic())
        lines = [f"# TYPE {METRIC} histogram"]
        lines += [
            f'{METRIC}_bucket{{{GET},le="{le}"}} {count}'
            for le, count in (("0.05", fast), ("0.5", fast), ("5", total), ("+Inf", total))
        ]
        lines += [f"{METRIC}_sum{{{GET}}} 1", f"{METRIC}_count{{{GET}}} {total}"]
        return 200, "text/plain; version=0.0.4", "\n".join(lines) + "\n"


@pytest.fixture(autouse=True)
def _nothing_kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts as a cold instance and leaves nothing for the next (the warm store is process-wide)."""
    monkeypatch.setenv(TOKEN_ENV, "latency-warm-token-Qp4")
    warm.forget()
    yield
    warm.forget()


@pytest.fixture
def metrics(pki: LocalhostTls) -> Iterator[tuple[str, Metrics]]:
    served = Metrics()
    with https_server(pki, served) as (url, _seen):
        yield url, served


def timed_run(
    tmp_path: Path, pki: LocalhostTls, server: str, params: dict[str, Any], cluster: str = "local"
) -> tuple[Result, float]:
    """One scheduled run as the function runs it (settings read, a new `Cluster`), and how long it took."""
    config = tmp_path / f"{cluster}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "environment": "latency-warm",
                "cluster": {
                    "name": cluster,
                    "auth": {
                        "mode": "token",
                        "server": server,
                        "token": f"env:{TOKEN_ENV}",
                        "ca_file": str(pki.ca_file),
                    },
                },
                "checks": {CHECK: {"params": params}},
            }
        )
    )
    settings = load_settings(config)
    started = time.monotonic()
    result = run_check(settings, CHECK, report=False, log=False)
    return result, time.monotonic() - started


def window(result: Result) -> float:
    text: str = result.details["window"]
    assert text.endswith(" s"), text
    return float(text.removesuffix(" s"))


def test_cold_run_waits_and_keeps_then_the_next_run_does_not_wait(
    tmp_path: Path, pki: LocalhostTls, metrics: tuple[str, Metrics]
) -> None:
    server, served = metrics
    cold, cold_took = timed_run(tmp_path, pki, server, {})  # the default cold wait: 3 s
    assert cold.status is Status.OK, cold.errors
    assert len(served.answered) == 2
    assert cold.details["previous_scrape"].startswith("cold (waited 3")
    assert 3.0 <= window(cold) < 3.5
    assert cold_took >= 3.0
    time.sleep(1.5)
    hot, hot_took = timed_run(tmp_path, pki, server, {})
    assert hot.status is Status.OK, hot.errors
    assert len(served.answered) == 3, "one scrape: the kept one is the window's start"
    assert hot_took < 1.0, f"a warm run took {hot_took:.2f} s: it waited"
    gap = served.answered[2] - served.answered[1]
    assert window(hot) == pytest.approx(gap, abs=0.25)
    assert hot.details["previous_scrape"] == f"warm (kept {round(window(hot), 1):g} s ago)"
    assert hot.details["verbs"]["GET"]["requests"] == 100


def test_kept_scrape_older_than_max_age_is_not_used(
    tmp_path: Path, pki: LocalhostTls, metrics: tuple[str, Metrics]
) -> None:
    server, served = metrics
    params = {"cold_interval_seconds": 1, "max_previous_age_seconds": 1.5}
    first, _took = timed_run(tmp_path, pki, server, params)
    assert first.status is Status.OK, first.errors
    time.sleep(2.0)
    second, took = timed_run(tmp_path, pki, server, params)
    assert second.status is Status.OK, second.errors
    assert len(served.answered) == 4, "two scrapes again: the kept one was too old"
    assert second.details["previous_scrape"].startswith("cold (waited 1")
    assert took >= 1.0


def test_a_scrape_kept_for_another_cluster_is_not_used(
    tmp_path: Path, pki: LocalhostTls, metrics: tuple[str, Metrics]
) -> None:
    server, served = metrics
    params = {"cold_interval_seconds": 1}
    timed_run(tmp_path, pki, server, params, cluster="east")
    time.sleep(1.1)
    other, _took = timed_run(tmp_path, pki, server, params, cluster="west")
    assert len(served.answered) == 4, "same server, another cluster name: cold"
    assert other.details["previous_scrape"].startswith("cold")
    time.sleep(1.1)
    again, took = timed_run(tmp_path, pki, server, params, cluster="east")
    assert len(served.answered) == 5
    assert again.details["previous_scrape"].startswith("warm")
    assert took < 1.0
    assert window(again) == pytest.approx(served.answered[4] - served.answered[1], abs=0.25)


def test_restart_between_kept_and_new_scrape_is_judged_since_the_restart(
    tmp_path: Path, pki: LocalhostTls, metrics: tuple[str, Metrics]
) -> None:
    server, served = metrics
    params = {"cold_interval_seconds": 1}
    first, _took = timed_run(tmp_path, pki, server, params)
    assert first.status is Status.OK, first.errors
    served.restart()
    time.sleep(1.1)
    after, took = timed_run(tmp_path, pki, server, params)
    assert len(served.answered) == 3
    assert took < 1.0
    assert after.details["previous_scrape"].startswith("warm")
    assert after.details["resets"] == ["resource=pods,scope=namespace,verb=GET"]
    # What it served since the restart (100 fast, 10 slow), never a negative difference with the kept scrape.
    assert after.details["verbs"]["GET"]["requests"] == 110
    assert after.status is Status.FAILED, after.summary
    (line,) = after.errors
    assert line.startswith("apiserver verb GET: observed p99 ")
    assert line.endswith("over 110 requests (want <= 1 s)")
