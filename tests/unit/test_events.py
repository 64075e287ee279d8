"""Event classification and on-demand option parsing (pure parsing, shared by both runtimes)."""

from __future__ import annotations

import pytest

from outpost.errors import InvocationError
from outpost.runtime.events import HttpRequest, InvocationOptions, ScheduledEvent, parse_lambda_event, parse_options
from samples.aws_events import SCHEDULED_EVENT


def test_scheduled_event_is_parsed_with_its_fields() -> None:
    event = parse_lambda_event(SCHEDULED_EVENT)
    assert isinstance(event, ScheduledEvent)
    assert event.region == "us-east-1"
    assert event.time.year == 2015


def test_rest_v1_single_value_query() -> None:
    request = parse_lambda_event({"httpMethod": "get", "queryStringParameters": {"report": "false"}})
    assert request == HttpRequest(method="GET", query=[("report", "false")], body=b"")


@pytest.mark.parametrize(
    ("query", "body", "report"),
    [
        ([], b"", True),
        ([("report", "false")], b"", False),
        ([("report", "TRUE")], b"", True),
        ([("report", "0")], b"", False),
        ([], b'{"report": false}', False),
        ([], b"  \n", True),
        ([], b"{}", True),
    ],
)
def test_options(query: list[tuple[str, str]], body: bytes, report: bool) -> None:
    assert parse_options(HttpRequest(method="POST", query=query, body=body)) == InvocationOptions(report=report)


def test_long_unknown_parameter_is_shortened_in_the_error() -> None:
    with pytest.raises(InvocationError) as raised:
        parse_options(HttpRequest(method="GET", query=[("x" * 500, "1")]))
    assert len(str(raised.value)) < 120
