"""Wall-clock deadlines, and an HTTP transport that cannot outlive one.

httpx's timeouts are per socket operation, so a server trickling a byte a second, or a slow resolver, can hold a
request for minutes; a monitor that hangs is worse than none. `Deadline` is one monotonic budget, and
`bounded_transport` caps every DNS lookup, connect, handshake, read, write and retry sleep at what is left, so a
request ends within the deadline whatever the server does. Only a DNS lookup uses a (daemon) thread.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
import time
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Self
from urllib.parse import urlsplit

import httpcore
import httpx


class Closing(ABC):
    """Owns a client over a bounded transport: a `with` block closes it on the way out, however the block ends."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @abstractmethod
    def close(self) -> None: ...


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

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
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

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
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

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
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


def is_loopback_host(host: str) -> bool:
    """`localhost` or a loopback address: where plain http may go (a test's stand-in), since it never leaves the
    machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def https_or_loopback(url: str) -> bool:
    """An https URL with a host, or plain http to loopback: the only URLs a secret or a token is sent to."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return (parts.scheme == "https" and bool(host)) or (parts.scheme == "http" and is_loopback_host(host))


@contextmanager
def bearer_post(
    url: str, document: Any, token: str, deadline: Deadline, transport: httpx.BaseTransport | None = None
) -> Iterator[httpx.Response]:
    """POST `document` as JSON with `token` as the bearer, its answer streamed, all within `deadline` (the bounded
    transport unless one is given): no redirect followed, no proxy or certificate setting read from the
    environment."""
    with (
        httpx.Client(
            transport=transport if transport is not None else bounded_transport(deadline),
            timeout=max(0.1, deadline.remaining()),
            follow_redirects=False,
            trust_env=False,
        ) as client,
        client.stream(
            "POST",
            url,
            json=document,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        ) as answer,
    ):
        yield answer


# -- bytes: one budget per run, counted while they arrive -------------------------------------------------


class ByteBudget:
    """How many decoded body bytes one run may still read, shared by every request (and thread) of the run.

    Why per run and not only per response: a LIST whose pages never end (a new `continue` token every time),
    or a check that asks many endpoints, stays under any per-response cap while it reads without end.
    """

    def __init__(self, total: int, setting: str) -> None:
        if total < 1:
            raise ValueError("a byte budget must be at least 1 byte")
        self.total = total
        self.setting = setting
        """The configuration key that raises it (named in every refusal)."""
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    def remaining(self) -> int:
        return max(0, self.total - self._used)

    def spend(self, count: int) -> bool:
        """Count `count` bytes as read; False once the total is exceeded (the bytes are counted anyway)."""
        with self._lock:
            self._used += count
            return self._used <= self.total


GZIP = "gzip"
"""The only content coding Outpost decodes (see `content_codings`)."""


class BodyRefused(Exception):
    """A body read by `read_body` could not be accepted; `reason` says which rule (the caller maps it)."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason  # "response-cap", "run-budget", "encoding", "corrupt", "deadline"
        super().__init__(message)


def content_codings(header: str) -> list[str]:
    """The content codings of a `Content-Encoding` value, outermost last, `identity` left out."""
    return [
        token.strip().lower() for token in header.split(",") if token.strip() and token.strip().lower() != "identity"
    ]


def read_body(
    response: httpx.Response,
    *,
    cap: int,
    cap_setting: str,
    budget: ByteBudget | None = None,
    deadline: Deadline | None = None,
    decode: bool = True,
) -> bytes:
    """The body of a streamed `response`, decoded by us, refused the moment it would pass a cap.

    httpx inflates each chunk whole before any size check, so an 8 KB `gzip, gzip` answer becomes a gigabyte.
    Here raw bytes are inflated with zlib's `max_length` at what is left under the caps (+1 to see the excess), so
    memory stays bounded by `cap`. Codings as Go's net/http client (src/net/http/transport.go): identity or exactly
    one `gzip` layer (multistream, as gzip.Reader); stacked or other codings are refused, named.

    `cap` bounds the decoded body (and its raw size), `budget` the run's decoded total, `deadline` the time;
    `decode=False` counts and returns the raw bytes (a caller that does not read the body, e.g. a heartbeat).
    Raises `BodyRefused` naming the rule and, for the caps, the setting to raise.
    """
    # A response built in memory (an httpx.MockTransport's) was read, and decoded, by httpx already: its content is
    # counted as it is. A response from the network is a stream, read here and only here.
    in_memory = response.is_stream_consumed
    codings = content_codings(response.headers.get("Content-Encoding", "")) if decode and not in_memory else []
    if len(codings) > 1:
        raise BodyRefused(
            "encoding",
            f"stacked content codings {', '.join(codings)!r} refused (one gzip layer "
            "at most, as Go's net/http client decodes)",
        )
    if codings and codings[0] != GZIP:
        raise BodyRefused(
            "encoding",
            f"content coding {codings[0][:40]!r} refused (identity or gzip only, as Go's net/http client decodes)",
        )
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        raise BodyRefused(
            "response-cap", f"response of {int(declared)} bytes exceeds the cap of {cap} bytes ({cap_setting})"
        )
    reader = _Inflater(cap, budget) if codings else None
    chunks: list[bytes] = []
    size = 0
    raw = 0

    def take(data: bytes) -> None:
        nonlocal size
        if not data:
            return
        size += len(data)
        if size > cap:
            raise BodyRefused(
                "response-cap",
                f"response exceeds the cap of {cap} bytes ({cap_setting})"
                + (" once inflated" if reader is not None else ""),
            )
        if budget is not None and not budget.spend(len(data)):
            raise BodyRefused(
                "run-budget", f"the run has read more than its budget of {budget.total} bytes ({budget.setting})"
            )
        chunks.append(data)

    for piece in [response.content] if in_memory else response.iter_raw():
        raw += len(piece)
        if raw > cap:
            raise BodyRefused("response-cap", f"response exceeds the cap of {cap} bytes ({cap_setting})")
        if deadline is not None and deadline.expired:
            raise BodyRefused("deadline", f"the deadline of {deadline.seconds:g} s ran out while reading the body")
        if reader is None:
            take(piece)
        else:
            reader.feed(piece, size, take)
    if reader is not None:
        reader.finish()
    return b"".join(chunks)


class _Inflater:
    """gzip, inflated in steps no larger than what is left under the caps (see `read_body`)."""

    def __init__(self, cap: int, budget: ByteBudget | None) -> None:
        self._cap = cap
        self._budget = budget
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip framing only, as Go's gzip.Reader
        self._started = False

    def feed(self, data: bytes, size: int, take: Callable[[bytes], None]) -> None:
        pending = data
        while pending:
            if self._inflate.eof:  # another gzip member follows (multistream), or trailing garbage
                self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            room = self._cap - size
            if self._budget is not None:
                room = min(room, self._budget.remaining())
            try:
                out = self._inflate.decompress(pending, max(room, 0) + 1)
            except zlib.error as error:
                raise BodyRefused("corrupt", f"gzip body is corrupt ({error})") from None
            self._started = True
            take(out)  # raises once `size` passes a cap: at most room + 1 bytes were made
            size += len(out)
            pending = self._inflate.unconsumed_tail or (self._inflate.unused_data if self._inflate.eof else b"")

    def finish(self) -> None:
        if self._started and not self._inflate.eof:
            raise BodyRefused("corrupt", "gzip body ends before its stream does (truncated)")
