"""Event classification and on-demand option parsing (pure parsing, shared by both runtimes)."""

from __future__ import annotations

import base64

import pytest

from outpost.errors import InvocationError
from outpost.runtime.events import (
    MAX_BODY_BYTES,
    MAX_BODY_DEPTH,
    HttpRequest,
    InvocationOptions,
    ScheduledEvent,
    nesting_exceeds,
    parse_body,
    parse_lambda_event,
    parse_options,
)
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


@pytest.mark.parametrize(
    ("text", "deep"),
    [
        ("[" * MAX_BODY_DEPTH + "]" * MAX_BODY_DEPTH, False),
        ("[" * (MAX_BODY_DEPTH + 1) + "]" * (MAX_BODY_DEPTH + 1), True),
        ('{"a":' * (MAX_BODY_DEPTH + 1), True),  # unbalanced: still judged by how deep it gets
        ('["' + "[" * 1000 + '"]', False),  # brackets inside a string do not nest
        ('["\\"' + "[" * 1000 + '"]', False),  # nor after an escaped quote inside it
        ('["\\\\"' + ", [" * (MAX_BODY_DEPTH + 1), True),  # an escaped backslash ends the string before them
        ("[" * 100_000, True),
    ],
)
def test_nesting_is_measured_without_recursion(text: str, deep: bool) -> None:
    assert nesting_exceeds(text) is deep


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "request body nests deeper than 32 levels"),
        (b'{"report":' * 40 + b"false" + b"}" * 40, "request body nests deeper than 32 levels"),
        (b'{"report": false}' + b" " * MAX_BODY_BYTES, f"request body is larger than {MAX_BODY_BYTES} bytes"),
        (b'{"report": false, "report": true}', "option 'report' given more than once in the body"),
        (b'{"report": {"a": 1, "a": 2}}', "option 'report.a' given more than once in the body"),
        (b'{"report": [{"x": 1}, {"x": 1, "x": 2}]}', "option 'report.1.x' given more than once in the body"),
        (b'{"report": false}\xff', "request body is not valid JSON"),
        (b"1" * 5000, "request body is not valid JSON"),  # past Python's int digit limit: a ValueError
    ],
)
def test_bodies_refused_before_or_while_parsing(body: bytes, reason: str) -> None:
    with pytest.raises(InvocationError) as raised:
        parse_options(HttpRequest(method="POST", body=body))
    assert str(raised.value).startswith(reason), str(raised.value)


def test_repeats_in_different_objects_are_not_repeats() -> None:
    assert parse_body(b'[{"a": 1}, {"a": 2}]') == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"report": 1}', "option 'report': Input should be a valid boolean"),
        (b'{"report": "false"}', "option 'report': Input should be a valid boolean"),
        (b'{"report": null}', "option 'report': Input should be a valid boolean"),
    ],
)
def test_option_types_are_strict(body: bytes, reason: str) -> None:
    with pytest.raises(InvocationError, match=f"^{reason}$"):
        parse_options(HttpRequest(method="POST", body=body))


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"isBase64Encoded": "false"}, "malformed event: isBase64Encoded: Input should be a valid boolean"),
        ({"isBase64Encoded": 0}, "malformed event: isBase64Encoded: Input should be a valid boolean"),
        ({"body": 5}, "malformed event: body: Input should be a valid string"),
        ({"rawQueryString": ["report=false"]}, "malformed event: rawQueryString: Input should be a valid string"),
    ],
)
def test_event_field_types_are_strict(fields: dict[str, object], reason: str) -> None:
    event = {"version": "2.0", "requestContext": {"http": {"method": "POST"}}, **fields}
    with pytest.raises(InvocationError, match=f"^{reason}$"):
        parse_lambda_event(event)


def test_a_large_base64_body_is_decoded_only_as_far_as_the_cap() -> None:
    encoded = base64.b64encode(b" " * (10 * MAX_BODY_BYTES)).decode()
    event = {"version": "2.0", "requestContext": {"http": {"method": "POST"}}, "isBase64Encoded": True, "body": encoded}
    request = parse_lambda_event(event)
    assert isinstance(request, HttpRequest)
    assert len(request.body) == MAX_BODY_BYTES + 1
    with pytest.raises(InvocationError, match="larger than"):
        parse_options(request)
