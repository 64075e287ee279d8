"""apiserver-triage `evaluate` over ladders recorded from the sandbox (healthy and under each of its faults), the
readyz bodies captured for apiserver-health, and the edge cases the sandbox cannot stage (LIST timeout, 5xx, a 429
on /readyz, a redirect, etcd failing between /readyz and the LIST)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit import NOW
from outpost.checks.apiserver_triage import ApiserverTriageParams, Step, TriageData, classify, evaluate
from outpost.result import Status

FIXTURES = Path(__file__).parent / "fixtures"
LADDERS: dict[str, Any] = json.loads((FIXTURES / "apiserver_triage" / "ladders.json").read_text())
ETCD_DOWN_READYZ = (FIXTURES / "apiserver_health" / "etcd_down_readyz.body").read_text()
HEALTHY_READYZ = (FIXTURES / "apiserver_health" / "healthy_readyz.body").read_text()
PARAMS = ApiserverTriageParams()
LIST_TIMED_OUT = Step("list", "timeout", 5001.0, None, "read timed out after 5.0 s")
READY_AFTER = Step("readyz-after", "ok", 3.0, 200)
"""The /readyz the probe asks again after a failed LIST, answered 200."""


def recorded(case: str, readyz_body: str = "") -> TriageData:
    ladder = LADDERS[case]
    return TriageData(
        ladder["address"],
        "/api/v1/namespaces",
        [Step(s["step"], s["outcome"], s["ms"], s["status_code"], s["detail"]) for s in ladder["steps"]],
        readyz_body,
    )


def edited(case: str, *replace: Step, readyz_body: str = "") -> TriageData:
    base = recorded(case, readyz_body)
    names = {step.name for step in replace}
    return TriageData(
        base.address, base.list_path, [s for s in base.steps if s.name not in names] + list(replace), readyz_body
    )


@pytest.mark.parametrize(
    ("data", "status", "triage_class", "error_part"),
    [
        pytest.param(recorded("healthy", HEALTHY_READYZ), Status.OK, "healthy", None, id="healthy"),
        pytest.param(
            recorded("apiserver-overload", HEALTHY_READYZ),
            Status.FAILED,
            "overloaded",
            "LIST /api/v1/namespaces?limit=1 answered 429 Too Many Requests while /readyz is 200",
            id="apiserver-overload",
        ),
        pytest.param(
            recorded("etcd-down", ETCD_DOWN_READYZ),
            Status.FAILED,
            "not-ready",
            "/readyz HTTP 500: etcd failed: reason withheld",
            id="etcd-down",
        ),
        pytest.param(recorded("apiserver-down"), Status.FAILED, "network", "TCP connect failed", id="apiserver-down"),
        pytest.param(
            recorded("apiserver-cert-expired"),
            Status.FAILED,
            "tls",
            "certificate verification failed: certificate has expired",
            id="apiserver-cert-expired",
        ),
        pytest.param(
            edited("healthy", LIST_TIMED_OUT, READY_AFTER, readyz_body=HEALTHY_READYZ),
            Status.FAILED,
            "overloaded",
            "timed out while /readyz is 200",
            id="list-timeout",
        ),
        pytest.param(
            edited("healthy", LIST_TIMED_OUT, Step("readyz-after", "failed", 3.0, 500), readyz_body=ETCD_DOWN_READYZ),
            Status.FAILED,
            "not-ready",
            "then /readyz not ready: etcd failed",
            id="etcd-died-after-readyz",
        ),
        pytest.param(
            edited("healthy", Step("list", "failed", 12.0, 503), READY_AFTER),
            Status.FAILED,
            "not-ready",
            "answered HTTP 503 while /readyz is 200",
            id="list-5xx",
        ),
        pytest.param(
            edited("healthy", Step("list", "unreachable", 1.0, None, "connection refused"), READY_AFTER),
            Status.FAILED,
            "network",
            "connection refused",
            id="list-unreachable",
        ),
        pytest.param(
            edited("healthy", Step("readyz", "timeout", 5000.0, None, "read timed out")),
            Status.FAILED,
            "not-ready",
            "/readyz did not answer",
            id="readyz-timeout",
        ),
        pytest.param(
            edited("healthy", Step("readyz", "failed", 1.0, 429)),
            Status.ERROR,
            None,
            "rate limited (health endpoints are exempt)",
            id="readyz-429-not-observed",
        ),
        pytest.param(
            edited("healthy", Step("readyz", "failed", 1.0, 302)),
            Status.ERROR,
            None,
            "redirect (not followed)",
            id="readyz-redirect",
        ),
        pytest.param(
            edited("healthy", Step("list", "failed", 1.0, 404), READY_AFTER),
            Status.ERROR,
            None,
            "answered HTTP 404, not observed",
            id="list-404",
        ),
    ],
)
def test_ladder_classes(data: TriageData, status: Status, triage_class: str | None, error_part: str | None) -> None:
    result = evaluate(data, PARAMS, NOW)
    assert result.status is status, result.summary
    assert result.details["class"] == triage_class
    assert [s["step"] for s in result.details["steps"]] == ["tcp", "tls", "readyz", "list", "readyz-after"]
    if error_part is None:
        assert result.errors == []
    else:
        (line,) = result.errors
        assert error_part in line
        assert line.startswith("apiserver 127.0.0.1:27987: ")
        # The next step is of the line's triage class (or "not observed"), for the address the probe dialled.
        (step,) = result.next_steps
        assert step.failure == (triage_class or "not-observed")
        if triage_class == "tls":
            assert step.command.startswith("openssl s_client -connect 127.0.0.1:27987 ")
    if triage_class not in (None, "healthy"):
        assert result.summary.startswith(f"apiserver {triage_class}: ")


def test_every_step_is_timed_in_details() -> None:
    result = evaluate(recorded("healthy", HEALTHY_READYZ), PARAMS, NOW)
    steps = {s["step"]: s for s in result.details["steps"]}
    assert steps["tcp"]["ms"] == 1.17
    assert steps["tls"]["detail"] == "TLSv1.3"
    assert steps["readyz"]["status_code"] == 200
    assert steps["list"]["detail"] == "1 item(s)"
    assert steps["readyz-after"]["outcome"] == "skipped"
    assert "tcp 1 ms" in result.summary


def test_slow_list_is_degraded_not_failed() -> None:
    result = evaluate(edited("healthy", Step("list", "ok", 2500.0, 200, "1 item(s)")), PARAMS, NOW)
    assert result.status is Status.DEGRADED
    assert "LIST took 2500 ms (want <= 1000 ms)" in result.summary
    assert result.details["class"] == "healthy"


def test_etcd_down_names_failing_readyz_checks_in_details() -> None:
    result = evaluate(recorded("etcd-down", ETCD_DOWN_READYZ), PARAMS, NOW)
    assert result.details["readyz_failing"] == ["etcd", "etcd-readiness"]


def test_classify_is_the_same_verdict() -> None:
    assert classify(recorded("apiserver-overload"))[0] == "overloaded"


def test_a_list_nested_past_the_parser_is_a_named_malformed_response() -> None:
    """A 200 whose body nests 100,000 levels is not a list of items (never a RecursionError, 'internal error')."""
    from outpost.checks.apiserver_triage import _check_list
    from outpost.errors import MalformedResponse

    step = Step("list", "ok", 12.0, 200)
    with pytest.raises(MalformedResponse, match=r"^LIST on cluster c: HTTP 200 without a list of items$"):
        _check_list(step, "[" * 100_000 + "]" * 100_000, "c")
