"""apiserver-health `evaluate` over real /livez and /readyz output captured from kube-apiserver v1.37."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit import NOW
from outpost.checks.apiserver_health import (
    ApiserverHealthData,
    ApiserverHealthParams,
    Endpoint,
    evaluate,
    parse_lines,
)
from outpost.result import Status

FIXTURES = Path(__file__).parent / "fixtures" / "apiserver_health"


def captured(name: str, path: str) -> Endpoint:
    status = int((FIXTURES / f"{name}.status").read_text())
    return Endpoint(path=path, status_code=status, body=(FIXTURES / f"{name}.body").read_text())


LB_PAGE = Endpoint("/readyz", 200, "<html><body>Welcome to nginx!</body></html>")


@pytest.mark.parametrize(
    ("livez", "readyz", "status", "summary_part", "error_parts", "failure"),
    [
        pytest.param(
            captured("healthy_livez", "/livez"),
            captured("healthy_readyz", "/readyz"),
            Status.OK,
            "live and ready",
            [],
            None,
            id="healthy",
        ),
        pytest.param(
            captured("etcd_down_livez", "/livez"),
            captured("etcd_down_readyz", "/readyz"),
            Status.FAILED,
            "/livez 500, /readyz 500; failing: etcd, etcd-readiness",
            [
                "apiserver /livez: etcd failed: reason withheld",
                "apiserver /readyz: etcd failed: reason withheld",
                "apiserver /readyz: etcd-readiness failed: reason withheld",
            ],
            "check-failing",
            id="etcd-down",
        ),
        pytest.param(
            captured("healthy_livez", "/livez"),
            captured("etcd_down_readyz_excluded", "/readyz"),
            Status.FAILED,
            "/readyz 500; failing: etcd-readiness",
            ["apiserver /readyz: etcd-readiness failed: reason withheld"],
            "check-failing",
            id="etcd-excluded-still-fails",
        ),
        pytest.param(
            captured("healthy_livez", "/livez"),
            Endpoint("/readyz", 503, "service unavailable\n"),
            Status.FAILED,
            "/readyz 503",
            ["apiserver /readyz: HTTP 503 'service unavailable'"],
            "endpoint-not-ok",
            id="non-verbose-failure",
        ),
        pytest.param(
            captured("healthy_livez", "/livez"),
            captured("plain_readyz", "/readyz"),
            Status.ERROR,
            "without a verbose health report",
            [],
            "not-a-health-report",
            id="200-without-report",
        ),
        pytest.param(
            captured("healthy_livez", "/livez"),
            LB_PAGE,
            Status.ERROR,
            "without a verbose health report",
            [],
            "not-a-health-report",
            id="load-balancer-page",
        ),
    ],
)
def test_evaluate(
    livez: Endpoint,
    readyz: Endpoint,
    status: Status,
    summary_part: str,
    error_parts: list[str],
    failure: str | None,
) -> None:
    result = evaluate(ApiserverHealthData(livez=livez, readyz=readyz), ApiserverHealthParams(), NOW)
    assert result.status is status
    assert summary_part in result.summary
    for part in error_parts:
        assert part in result.errors
    # Every line carries its next step, of the expected class.
    assert [step.failure for step in result.next_steps] == [failure] * len(result.errors)
    if failure == "not-a-health-report":
        assert result.next_steps[0].command == "kubectl get --raw '/readyz?verbose'"
    elif failure:
        assert result.next_steps[0].command == "kubectl get --raw /metrics/slis"
    assert result.check == "apiserver-health"
    if status is Status.OK:
        assert result.errors == []


def test_every_readyz_line_is_in_details() -> None:
    readyz = captured("healthy_readyz", "/readyz")
    result = evaluate(ApiserverHealthData(captured("healthy_livez", "/livez"), readyz), ApiserverHealthParams(), NOW)
    lines = [line for line in readyz.body.splitlines() if line.startswith("[")]
    assert len(lines) > 20
    assert [c["line"] for c in result.details["readyz"]["checks"]] == lines
    assert {c["name"] for c in result.details["readyz"]["checks"]} >= {"ping", "etcd", "informer-sync"}


def test_200_with_failing_line_is_failed() -> None:
    body = captured("etcd_down_readyz", "/readyz").body
    result = evaluate(
        ApiserverHealthData(captured("healthy_livez", "/livez"), Endpoint("/readyz", 200, body)),
        ApiserverHealthParams(),
        NOW,
    )
    assert result.status is Status.FAILED
    assert any("HTTP 200 although" in e for e in result.errors)


def test_parse_lines_reads_marks() -> None:
    assert parse_lines("[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n") == [
        {"name": "ping", "ok": True, "line": "[+]ping ok"},
        {"name": "etcd", "ok": False, "line": "[-]etcd failed: reason withheld"},
    ]


def test_params_refuse_unknown_keys() -> None:
    with pytest.raises(ValueError, match="extra"):
        ApiserverHealthParams.model_validate({"exclud": ["etcd"]})
