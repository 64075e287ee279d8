"""A GET to a plain URL, outside the Kubernetes API: no cluster credential ever goes with it.

A check may watch an endpoint a workload publishes itself; sending the cluster's token there would hand it to
whoever answers, so this client is separate from `Cluster` and has no credential: no Authorization, cookies or
environment proxies, userinfo refused, https verified against the system store. It is bounded like every request
(deadline, `read_body`, `max_response_bytes`), follows no redirect, and its errors name the URL without its query.
"""

from __future__ import annotations

import ssl
import time
from urllib.parse import urlsplit

import httpx

from outpost.bounded import GZIP, BodyRefused, Deadline, bounded_transport, read_body
from outpost.cluster.client import DEFAULT_MAX_RESPONSE_BYTES, USER_AGENT, Response
from outpost.errors import ClusterTimeout, ClusterUnreachable, MalformedResponse, ResponseTooLarge


def safe_url(url: str) -> str:
    """`url` without userinfo, query or fragment: what messages may show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def check_url(url: str) -> str:
    """`url` if it is an absolute http(s) URL without credentials in it; ValueError otherwise."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError as error:
        raise ValueError(f"not a valid URL ({error})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry credentials (user:password@): Outpost sends none to a plain URL")
    return url


def get_url(
    url: str,
    *,
    deadline: Deadline,
    timeout: float,
    connect_timeout: float = 5.0,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    accept: str = "*/*",
) -> Response:
    """GET `url` with no credential; any HTTP status is returned for the caller to judge."""
    check_url(url)
    where = f"GET {safe_url(url)}"
    if deadline.expired:
        raise ClusterTimeout(f"{where}: the check's deadline of {deadline.seconds:g} s ran out")
    verify = ssl.create_default_context()
    limits = httpx.Timeout(deadline.cap(timeout), connect=deadline.cap(min(connect_timeout, timeout)))
    started = time.monotonic()
    with httpx.Client(
        verify=verify,
        transport=bounded_transport(deadline, verify),
        follow_redirects=False,
        trust_env=False,
        headers={"User-Agent": USER_AGENT},
    ) as client:
        try:
            with client.stream(
                "GET", url, headers={"Accept": accept, "Accept-Encoding": GZIP}, timeout=limits
            ) as response:
                # Decoded by us as it arrives (one gzip layer at most, inflated within the cap), never by httpx.
                content = read_body(
                    response, cap=max_response_bytes, cap_setting="cluster.max_response_bytes", deadline=deadline
                )
        except BodyRefused as refused:
            if refused.reason in ("response-cap", "run-budget"):
                raise ResponseTooLarge(f"{where}: {refused}") from None
            if refused.reason == "deadline":
                raise ClusterTimeout(f"{where}: the check's deadline of {deadline.seconds:g} s ran out") from None
            raise MalformedResponse(f"{where}: {refused}") from None
        except httpx.TimeoutException:
            if deadline.expired:
                raise ClusterTimeout(f"{where}: the check's deadline of {deadline.seconds:g} s ran out") from None
            raise ClusterTimeout(f"{where}: no answer within {timeout:g} s") from None
        except httpx.HTTPError as error:
            first = (str(error).strip().splitlines() or ["no detail"])[0][:160]
            raise ClusterUnreachable(f"{where}: {type(error).__name__}: {first}") from None
    return Response(
        path=safe_url(url),
        status_code=response.status_code,
        content=content,
        headers=dict(response.headers),
        elapsed_ms=int((time.monotonic() - started) * 1000),
        encoding=response.encoding or "utf-8",
    )


__all__ = ["check_url", "get_url", "safe_url"]
