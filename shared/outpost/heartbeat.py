"""The Vigilmon seam: heartbeat pings and maintenance windows, over httpx with TLS verification on.

`ping` returns only after a 2xx; timeouts, connection errors and 5xx are retried with backoff, 3xx/4xx are not (a
redirect would carry the token to a host we did not choose). A delivery is bounded on the wall clock by its
worst case, so it fits the function timeout; no body byte is read. URLs and keys never appear in an error
(`ReportError ... from None`), and plain http is for loopback only. Secrets arrive as any `reveal()` object, so
this module need not import `outpost.secrets`. Maintenance protocol: docs/contracts.md "Vigilmon interface".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from outpost.bounded import Closing, Deadline, bounded_transport, https_or_loopback
from outpost.errors import ReportError, ReportRefused
from outpost.logs import install_redaction

log = logging.getLogger(__name__)
install_redaction()


class Revealable(Protocol):
    """A secret holder: its value is only available through `reveal()`."""

    def reveal(self) -> str: ...


def _checked_url(url: str, what: str) -> str:
    """Refuse anything but https (or http to loopback); the message never quotes the URL."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number raises here, not halfway through a request
        httpx.URL(url)
    except (ValueError, TypeError, httpx.InvalidURL):
        raise ReportError(f"{what}: the URL is not a valid http(s) URL") from None
    if https_or_loopback(url):
        return url
    if parts.scheme == "http":
        raise ReportError(f"{what}: the URL must be https:// (plain http is only allowed to loopback)")
    raise ReportError(f"{what}: the URL is not a valid http(s) URL")


class _RetryingClient:
    """One httpx client plus the retry policy shared by heartbeats and maintenance calls."""

    def __init__(
        self,
        timeout_seconds: float,
        retries: int,
        backoff_seconds: float,
        transport: httpx.BaseTransport | None,
        sleep: Callable[[float], None],
        budget_seconds: float | None = None,
    ) -> None:
        if retries < 0 or timeout_seconds <= 0 or backoff_seconds < 0:
            raise ValueError("timeout must be > 0, retries and backoff >= 0")
        self.retries = retries
        self.backoff_seconds = backoff_seconds
        self.timeout_seconds = timeout_seconds
        self.budget = Deadline(
            budget_seconds
            if budget_seconds is not None
            else worst_case_seconds(timeout_seconds, retries, backoff_seconds)
        )
        self._sleep = sleep
        self._client = httpx.Client(
            transport=transport if transport is not None else bounded_transport(self.budget),
            timeout=timeout_seconds,
            follow_redirects=False,
            trust_env=False,
            headers={"Accept-Encoding": "identity"},
        )

    def close(self) -> None:
        self._client.close()

    def send(self, what: str, method: str, url: str, **kwargs: Any) -> int:
        """The 2xx status Vigilmon answered (after retries); ReportError otherwise. The body is never read."""
        attempts = self.retries + 1
        last_cause = "no attempt made"
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                delay = self.backoff_seconds * 2 ** (attempt - 2)
                if delay >= self.budget.remaining():
                    last_cause += f"; no time left for another attempt within {self.budget.seconds:g}s"
                    attempts = attempt - 1
                    break
                log.info("%s: attempt %d/%d in %.2fs after %s", what, attempt, attempts, delay, last_cause)
                self._sleep(delay)
            if self.budget.expired:
                last_cause = f"the delivery budget of {self.budget.seconds:g}s ran out"
                attempts = attempt - 1
                break
            try:
                # Streamed and closed unread: the status line and headers are the whole answer we need, and an
                # unread body costs nothing however long (or compressed) it is (the connection is dropped).
                with self._client.stream(method, url, **kwargs) as response:
                    status = response.status_code
            except httpx.TimeoutException:
                last_cause = (
                    f"the delivery budget of {self.budget.seconds:g}s ran out"
                    if self.budget.expired
                    else f"timed out after {self.timeout_seconds:g}s"
                )
                continue
            except httpx.InvalidURL:
                raise ReportError(f"{what}: the URL is not a valid http(s) URL") from None
            except httpx.TransportError as error:
                # The class name (ConnectError, RemoteProtocolError) says enough; the text may hold the URL.
                last_cause = f"connection failed ({type(error).__name__})"
                continue
            if status >= 500:
                last_cause = f"HTTP {status}"
                continue
            if 200 <= status < 300:
                return status
            if 300 <= status < 400:
                raise ReportRefused(f"{what}: HTTP {status} (redirect not followed, not retried)")
            raise ReportRefused(f"{what}: HTTP {status} (not retried)")
        attempts = max(attempts, 1)
        plural = "s" if attempts > 1 else ""
        raise ReportError(f"{what}: {last_cause} (gave up after {attempts} attempt{plural})")


DELIVERY_MARGIN_SECONDS = 1.0
"""Room for connection set-up beyond the attempts' own timeouts, so the budget does not cut the last one short."""


def worst_case_seconds(timeout_seconds: float, retries: int, backoff_seconds: float) -> float:
    """The longest a delivery may take: every attempt's timeout, every backoff and a margin (it is the budget)."""
    backoffs = sum(backoff_seconds * 2.0**n for n in range(retries))
    return float(timeout_seconds * (retries + 1) + backoffs + DELIVERY_MARGIN_SECONDS)


class _VigilmonEndpoint(Closing):
    """Owns one `_RetryingClient`: use as a context manager, or call `close()`."""

    _http: _RetryingClient

    def close(self) -> None:
        self._http.close()


class HeartbeatClient(_VigilmonEndpoint):
    """Pings a Vigilmon heartbeat URL. Use as a context manager, or call `close()`."""

    def __init__(
        self,
        timeout_seconds: float = 10.0,
        retries: int = 3,
        backoff_seconds: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        budget_seconds: float | None = None,
    ) -> None:
        self._http = _RetryingClient(timeout_seconds, retries, backoff_seconds, transport, sleep, budget_seconds)

    def __repr__(self) -> str:
        return f"HeartbeatClient(retries={self._http.retries}, timeout={self._http.timeout_seconds:g}s)"

    def ping(self, url: Revealable, label: str | None = None) -> None:
        """GET the heartbeat URL; raises ReportError (without the URL) unless it answered 2xx."""
        what = f"heartbeat for {label}" if label else "heartbeat"
        target = _checked_url(url.reveal(), what)
        self._http.send(what, "GET", target)
        log.info("%s: delivered", what)


class VigilmonClient(_VigilmonEndpoint):
    """Vigilmon's maintenance API (`POST {api_url}/maintenance`, bearer API key)."""

    def __init__(
        self,
        api_url: str,
        api_key: Revealable,
        timeout_seconds: float = 10.0,
        retries: int = 3,
        backoff_seconds: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._endpoint = _checked_url(api_url.rstrip("/") + "/maintenance", "vigilmon maintenance")
        self._api_key = api_key
        self._http = _RetryingClient(timeout_seconds, retries, backoff_seconds, transport, sleep)

    def __repr__(self) -> str:
        return "VigilmonClient(api_key=***)"

    def start_maintenance(self, monitor_id: str, duration_minutes: int) -> None:
        """Open a maintenance window of `duration_minutes` (>= 1) for one monitor."""
        whole = isinstance(duration_minutes, int) and not isinstance(duration_minutes, bool)
        if not whole or duration_minutes < 1:
            raise ValueError("duration_minutes must be a whole number >= 1 (use end_maintenance to end)")
        self._post(monitor_id, duration_minutes)

    def end_maintenance(self, monitor_id: str) -> None:
        """End the window: the same call with `duration_minutes: 0` (see the module docstring)."""
        self._post(monitor_id, 0)

    def _post(self, monitor_id: str, duration_minutes: int) -> None:
        if not monitor_id or not monitor_id.strip():
            raise ValueError("monitor_id must not be empty")
        what = f"vigilmon maintenance for monitor {monitor_id}"
        self._http.send(
            what,
            "POST",
            self._endpoint,
            json={"monitor_id": monitor_id, "duration_minutes": duration_minutes},
            headers={"Authorization": f"Bearer {self._api_key.reveal()}", "Accept": "application/json"},
        )
