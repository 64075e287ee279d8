"""Wall-clock deadlines, and an HTTP transport that cannot outlive one.

Why: httpx's timeouts are per socket operation. A server that trickles its headers or body one byte a
second never trips a 10 s read timeout and can hold a request for minutes; a name that the resolver cannot
answer holds `getaddrinfo` for as long as the resolver likes. A monitor that hangs is worse than none.

Guarantees:
- `Deadline` is one monotonic budget; every blocking step of a run asks it for what is left;
- `bounded_transport(deadline, ...)` is an httpx transport whose every network operation (DNS lookup,
  TCP connect, TLS handshake, each read and each write, retry sleeps) gets at most what is left of the
  deadline, and fails with a timeout as soon as nothing is left: the whole request, headers and body
  included, ends within the deadline (plus scheduling noise), whatever the server does;
- nothing is left behind: sockets are the transport's own and close with it; the only helper thread is
  a DNS lookup of a host name (IP literals need none), which is a daemon thread that the resolver's own
  timeout ends, and the run does not wait for it.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx


class Deadline:
    """A wall-clock budget of `seconds`, counted from construction."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._monotonic = time.monotonic
        self._expires = self._monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._expires - self._monotonic())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def cap(self, timeout: float) -> float:
        """`timeout`, shortened to what is left of the deadline."""
        return min(timeout, self.remaining())


def _capped(deadline: Deadline, timeout: float | None, exception: type[Exception], what: str) -> float:
    remaining = deadline.remaining()
    if remaining <= 0.0:
        raise exception(f"the deadline of {deadline.seconds:g} s ran out before the {what}")
    return remaining if timeout is None else min(timeout, remaining)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _capped(self._deadline, timeout, httpcore.ReadTimeout, "read"))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _capped(self._deadline, timeout, httpcore.WriteTimeout, "write"))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        budget = _capped(self._deadline, timeout, httpcore.ConnectTimeout, "TLS handshake")
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, budget), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def _resolve(host: str, port: int, timeout: float) -> list[str]:
    """`host`'s addresses, or ConnectTimeout/ConnectError within `timeout` (a daemon thread asks)."""
    try:
        ipaddress.ip_address(host)
        return [host]
    except ValueError:
        pass
    answer: list[str] = []
    failure: list[str] = []

    def lookup() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            answer.extend(dict.fromkeys(str(info[4][0]) for info in infos))
        except OSError as error:
            failure.append(str(error) or type(error).__name__)

    worker = threading.Thread(target=lookup, name="outpost-dns", daemon=True)
    worker.start()
    worker.join(timeout)
    if answer:
        return answer
    if failure:
        raise httpcore.ConnectError(f"DNS lookup failed ({failure[0]})")
    if worker.is_alive():
        raise httpcore.ConnectTimeout(f"DNS lookup did not answer within {timeout:.1f} s")
    raise httpcore.ConnectError("DNS lookup failed (no address)")


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's synchronous backend with every operation capped by one `Deadline`."""

    def __init__(self, deadline: Deadline) -> None:
        self._deadline = deadline
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        addresses = _resolve(host, port, _capped(self._deadline, timeout, httpcore.ConnectTimeout, "DNS lookup"))
        last: Exception | None = None
        for address in addresses:  # every address in turn, as socket.create_connection would, within the deadline
            budget = _capped(self._deadline, timeout, httpcore.ConnectTimeout, "connect")
            try:
                stream = self._inner.connect_tcp(address, port, budget, local_address, socket_options)
            except httpcore.ConnectError as error:
                last = error
                continue
            return _DeadlineStream(stream, self._deadline)
        raise last or httpcore.ConnectError("no address to connect to")

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not used by Outpost")

    def sleep(self, seconds: float) -> None:
        time.sleep(min(seconds, self._deadline.remaining()))


def bounded_transport(deadline: Deadline, verify: ssl.SSLContext | bool = True) -> httpx.HTTPTransport:
    """An httpx transport whose network operations are all capped by `deadline` (see the module doc)."""
    transport = httpx.HTTPTransport(verify=verify, retries=0)
    pool = getattr(transport, "_pool", None)
    if not isinstance(pool, httpcore.ConnectionPool) or not hasattr(pool, "_network_backend"):
        # httpx changed its internals: refuse to run unbounded rather than silently lose the deadline.
        raise RuntimeError("this httpx version's transport cannot take a deadline-bounded network backend")
    pool._network_backend = DeadlineBackend(deadline)
    return transport
