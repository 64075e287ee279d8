"""ls-latency end to end: the sandbox's LS workload (Service default/ls-web, backend ls-workload) through the
API server's service proxy, as configured in infra/environments/local.yaml, with the probe's identity.

Healthy → ok and exactly one ping. An answer slower than `degraded_ms` but within `failed_ms` (`backend-slow`
with a 1.5 s delay) → degraded, named, still pinged. A 200 with a body upstream never sends (`backend-wrong-body`)
→ failed with local.yaml's `expect_body`, ok with `expect_body: null` (status code alone). The workload down,
answering 500, hanging or slower than `failed_ms` is the fault catalogue's (test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from typing import Any

from check_runs import CheckRuns, broken, shipped_params

from outpost.result import Status

CHECK = "ls-latency"
NAMED = "ls endpoint ls-web (service default/ls-web:80 /)"


def test_healthy_is_ok_and_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, config=runs.local(CHECK))
    (endpoint,) = result.details["endpoints"]
    assert endpoint["status_code"] == 200
    assert endpoint["elapsed_ms"] < 1000


def test_slower_than_degraded_ms_is_degraded_and_pinged(runs: CheckRuns) -> None:
    config = runs.local(CHECK)
    with broken("backend-slow", runs.sandbox.state_dir, "ls-workload", delay_ms=1500):
        result = runs.run(config, CHECK)
    assert result.status is Status.DEGRADED, result.summary
    (line,) = result.errors
    assert line.startswith(f"{NAMED}: observed HTTP 200 in ")
    assert line.endswith("ms (want HTTP 200 within 1000 ms)")
    assert runs.receiver.pings_for(CHECK) == 1


def test_a_wrong_body_passes_only_when_judged_by_status_code(runs: CheckRuns) -> None:
    config = runs.local(CHECK)
    with broken("backend-wrong-body", runs.sandbox.state_dir, "ls-workload"):
        by_body = runs.run(config, CHECK)
        endpoints: list[dict[str, Any]] = [{**e, "expect_body": None} for e in shipped_params(CHECK)["endpoints"]]
        by_status = runs.run(runs.local(CHECK, {"endpoints": endpoints}), CHECK)
    assert by_body.status is Status.FAILED, by_body.summary
    assert by_body.errors == [f"{NAMED}: observed HTTP 200 without 'ok' in the body ('unexpected')"]
    assert by_status.status is Status.OK, by_status.errors
    assert runs.receiver.pings_for(CHECK) == 1  # the status-code run's only
