from __future__ import annotations

import pytest
from pydantic import ValidationError

from outpost.result import Result, Status


@pytest.mark.parametrize(
    ("status", "healthy", "exit_code"),
    [(Status.OK, True, 0), (Status.DEGRADED, True, 0), (Status.FAILED, False, 1), (Status.ERROR, False, 2)],
)
def test_status_contract(status: Status, healthy: bool, exit_code: int) -> None:
    assert status.healthy is healthy
    assert status.exit_code == exit_code


def test_ok_never_carries_errors() -> None:
    with pytest.raises(ValidationError, match="cannot be ok"):
        Result(check="x", status=Status.OK, summary="fine", errors=["node n7 has no ready pod"])


def test_degraded_may_carry_errors() -> None:
    result = Result(check="x", status=Status.DEGRADED, summary="1 slow", errors=["svc a: p99 2 s"])
    assert result.errors == ["svc a: p99 2 s"]


def test_summary_is_one_line() -> None:
    with pytest.raises(ValidationError, match="one line"):
        Result(check="x", status=Status.FAILED, summary="a\nb")


def test_error_constructor_names_cause() -> None:
    result = Result.error("apiserver-health", "GET /livez on cluster prod: connection refused")
    assert result.status is Status.ERROR
    assert result.errors == [result.summary]
    assert result.model_dump(mode="json")["status"] == "error"


def test_result_json_shape() -> None:
    dumped = Result(check="c", status=Status.OK, summary="s").model_dump(mode="json")
    assert set(dumped) == {"check", "status", "summary", "errors", "next_steps", "details", "duration_ms", "reported"}
