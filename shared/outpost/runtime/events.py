"""Invocation shapes, parsed into pydantic models at the edge of each runtime.

An AWS event is exactly a scheduled EventBridge event, a payload v2.0 or a REST v1.0 event, never guessed.
Every HTTP request becomes one `HttpRequest` and its options go through one `parse_options`, so Lambda and GCF
accept and refuse the same requests. Only `report` is an option. Bodies over 64 KiB, nested over 32 levels
(a linear scan, no recursion), not UTF-8 or repeating a key are refused with their reason, since a parser
keeping the last `report` would ping; types are strict, event fields included.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from typing import Any, Literal
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from outpost.errors import InvocationError

ALLOWED_METHODS = ("GET", "POST")
MAX_BODY_BYTES = 64 * 1024
"""Largest request body read or parsed: the options object is a few bytes (`{"report": false}`)."""
MAX_BODY_DEPTH = 32
"""Deepest nesting of arrays/objects a body may have (the options object has one level)."""
_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


class _Event(BaseModel):
    # Platforms add fields over time; we ignore what we do not read rather than break on a new one.
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class ScheduledEvent(_Event):
    """EventBridge (CloudWatch Events) scheduled event, as a `schedule` rule delivers it."""

    version: StrictStr = "0"
    id: StrictStr
    detail_type: Literal["Scheduled Event"] = Field(alias="detail-type")
    source: Literal["aws.events"]
    account: StrictStr
    time: dt.datetime
    region: StrictStr
    resources: list[StrictStr] = Field(default_factory=list)
    detail: dict[str, Any] = Field(default_factory=dict)


class _HttpDetails(_Event):
    method: StrictStr
    path: StrictStr = "/"


class _RequestContextV2(_Event):
    http: _HttpDetails
    request_id: StrictStr | None = Field(None, alias="requestId")


class HttpApiV2Event(_Event):
    """Lambda Function URL or API Gateway HTTP API, payload format 2.0."""

    version: Literal["2.0"]
    raw_path: StrictStr = Field("/", alias="rawPath")
    raw_query_string: StrictStr = Field("", alias="rawQueryString")
    headers: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    request_context: _RequestContextV2 = Field(alias="requestContext")
    body: StrictStr | None = None
    is_base64_encoded: StrictBool = Field(False, alias="isBase64Encoded")


class RestApiV1Event(_Event):
    """API Gateway REST API (or HTTP API payload 1.0) proxy integration event."""

    http_method: StrictStr = Field(alias="httpMethod")
    path: StrictStr = "/"
    headers: dict[StrictStr, StrictStr] | None = None
    query_string_parameters: dict[StrictStr, StrictStr] | None = Field(None, alias="queryStringParameters")
    multi_value_query_string_parameters: dict[StrictStr, list[StrictStr]] | None = Field(
        None, alias="multiValueQueryStringParameters"
    )
    body: StrictStr | None = None
    is_base64_encoded: StrictBool = Field(False, alias="isBase64Encoded")


class HttpRequest(BaseModel):
    """An HTTP invocation, the same whichever platform delivered it."""

    model_config = ConfigDict(frozen=True)

    method: str
    query: list[tuple[str, str]] = Field(default_factory=list)
    body: bytes = b""


class InvocationOptions(BaseModel):
    """What an on-demand caller may ask for."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    report: StrictBool = True


def _first_error(error: ValidationError) -> str:
    item = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in item["loc"]) or "(event)"
    return f"{where}: {item['msg']}"


def _too_large() -> InvocationError:
    return InvocationError(
        f'request body is larger than {MAX_BODY_BYTES} bytes (the options are tiny: {{"report": false}})'
    )


def _decode_body(body: str | None, is_base64: bool) -> bytes:
    """The body's bytes, at most `MAX_BODY_BYTES` + 1 of them: enough for `parse_body` to refuse a larger one."""
    if body is None:
        return b""
    if not is_base64:
        try:
            return body[: MAX_BODY_BYTES + 1].encode("utf-8")[: MAX_BODY_BYTES + 1]
        except UnicodeEncodeError:  # a lone surrogate, e.g. from a "\ud800" escape in the event
            raise InvocationError("request body is not valid JSON") from None
    try:
        # Whole 4-character groups, 3 bytes each: only the head of a large body is decoded.
        return base64.b64decode(body[: (MAX_BODY_BYTES // 3 + 1) * 4], validate=True)[: MAX_BODY_BYTES + 1]
    except (binascii.Error, ValueError):
        raise InvocationError("request body is marked base64 but is not valid base64") from None


def parse_lambda_event(event: Any) -> ScheduledEvent | HttpRequest:
    """Classify and parse one Lambda event; InvocationError for anything but the three shapes."""
    if not isinstance(event, dict):
        raise InvocationError(f"event is a {type(event).__name__}, not a JSON object")
    try:
        if event.get("source") == "aws.events" or "detail-type" in event:
            return ScheduledEvent.model_validate(event)
        if event.get("version") == "2.0" and "requestContext" in event:
            v2 = HttpApiV2Event.model_validate(event)
            return HttpRequest(
                method=v2.request_context.http.method.upper(),
                query=parse_qsl(v2.raw_query_string, keep_blank_values=True),
                body=_decode_body(v2.body, v2.is_base64_encoded),
            )
        if "httpMethod" in event:
            v1 = RestApiV1Event.model_validate(event)
            if v1.multi_value_query_string_parameters is not None:
                pairs = [(k, v) for k, vs in v1.multi_value_query_string_parameters.items() for v in vs]
            else:
                pairs = list((v1.query_string_parameters or {}).items())
            return HttpRequest(
                method=v1.http_method.upper(), query=pairs, body=_decode_body(v1.body, v1.is_base64_encoded)
            )
    except ValidationError as error:
        raise InvocationError(f"malformed event: {_first_error(error)}") from None
    keys = ", ".join(sorted(str(key) for key in event)[:6]) or "none"
    raise InvocationError(
        f"unrecognised event (keys: {keys}): expected an EventBridge scheduled event or an HTTP request"
    )


def _show(text: str) -> str:
    # Caller-controlled text goes into a one-line error: keep it short and on one line.
    return repr(text[:40] + ("..." if len(text) > 40 else ""))


def _parse_bool(name: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise InvocationError(f"query parameter {name!r} must be true or false")


def nesting_exceeds(text: str, limit: int = MAX_BODY_DEPTH) -> bool:
    """Whether the JSON text `text` nests arrays/objects deeper than `limit`, by one linear scan (no recursion).

    Brackets inside strings do not count. Invalid JSON is not judged here (json.loads refuses it next).
    """
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as parsed: its key/value pairs in order, repeats kept (so they can be refused by path)."""


def _unique(value: Any, path: str) -> Any:
    """`value` with every object a dict, or InvocationError naming the path of the first repeated key."""
    if isinstance(value, _Pairs):
        seen: dict[str, Any] = {}
        for key, item in value:
            where = f"{path}.{key}" if path else key
            if key in seen:
                raise InvocationError(f"option {_show(where)} given more than once in the body")
            seen[key] = _unique(item, where)
        return seen
    if isinstance(value, list):
        return [_unique(item, f"{path}.{index}" if path else str(index)) for index, item in enumerate(value)]
    return value


def parse_body(body: bytes) -> Any:
    """The JSON document of one request body: size, encoding and depth checked first, repeated keys refused."""
    too_large = len(body) > MAX_BODY_BYTES
    try:
        # A body over the cap is refused anyway: its head is decoded leniently, only to name a nesting too deep.
        text = body[: MAX_BODY_BYTES + 1].decode("utf-8", "replace" if too_large else "strict")
    except UnicodeDecodeError:
        raise InvocationError("request body is not valid JSON") from None
    if nesting_exceeds(text):
        raise InvocationError(
            f"request body nests deeper than {MAX_BODY_DEPTH} levels "
            '(the options are one flat object: {"report": false})'
        )
    if too_large:
        raise _too_large()
    try:
        document = json.loads(text, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        raise InvocationError("request body is not valid JSON") from None
    return _unique(document, "")


def parse_options(request: HttpRequest) -> InvocationOptions:
    """The on-demand options of one HTTP request; InvocationError (HTTP 400) with the reason otherwise."""
    from_query: dict[str, Any] = {}
    for key, value in request.query:
        if key not in InvocationOptions.model_fields:
            raise InvocationError(f"unknown query parameter {_show(key)} (allowed: report)")
        if key in from_query:
            raise InvocationError(f"query parameter {key!r} given more than once")
        from_query[key] = _parse_bool(key, value)
    from_body: dict[str, Any] = {}
    if request.body.strip() or len(request.body) > MAX_BODY_BYTES:
        document = parse_body(request.body)
        if not isinstance(document, dict):
            raise InvocationError('request body must be a JSON object such as {"report": false}')
        from_body = document
    both = sorted(set(from_query) & set(from_body))
    if both:
        raise InvocationError(f"option {both[0]!r} given in both the query and the body")
    try:
        return InvocationOptions.model_validate({**from_query, **from_body}, strict=True)
    except ValidationError as error:
        item = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in item["loc"])
        if item["type"] == "extra_forbidden":
            raise InvocationError(f"unknown option {_show(where)} in the body (allowed: report)") from None
        raise InvocationError(f"option {where!r}: {item['msg']}") from None
