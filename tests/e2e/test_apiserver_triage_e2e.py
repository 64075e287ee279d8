"""apiserver-triage end to end: the real sandbox API server, the probe's own identity, a real receiver.

Healthy → ok (class healthy, every step timed) and exactly one ping. Its faults' classes on the first run
(apiserver-overload → overloaded, apiserver-cert-expired → tls, etcd-down → not-ready, apiserver-down → network) are
asserted by test_fault_catalogue_e2e.py, with one break each.
"""

from __future__ import annotations

from check_runs import CheckRuns

CHECK = "apiserver-triage"


def test_healthy_ladder_is_ok_timed_and_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK)
    assert result.details["class"] == "healthy"
    steps = {step["step"]: step for step in result.details["steps"]}
    for name in ("tcp", "tls", "readyz", "list"):
        assert steps[name]["outcome"] == "ok"
        assert steps[name]["ms"] is not None
    assert steps["list"]["status_code"] == 200
    assert result.details["address"] == runs.sandbox.server.removeprefix("https://")
