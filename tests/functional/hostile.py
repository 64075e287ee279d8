"""Hostile local servers: real sockets on 127.0.0.1 that misbehave the way broken networks and servers do.

`HostileServer(behaviour, pki)` reads one request (TLS or plain) and hands the raw socket to a behaviour that
writes what it likes (a trickle, garbage, a truncated or huge body, nothing), recording every request head. As a
script (`python hostile.py BEHAVIOUR CERT KEY`) it serves from its own process, so the warm-process leak test
counts only Outpost's threads and descriptors.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import socket
import ssl
import sys
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Request:
    line: str
    headers: dict[str, str]

    @property
    def path(self) -> str:
        return self.line.split(" ")[1] if " " in self.line else ""

    @property
    def authorization(self) -> str:
        return self.headers.get("authorization", "")


Behaviour = Callable[[socket.socket, Request, threading.Event], None]


def _answer(
    conn: socket.socket, status: int, body: bytes, headers: dict[str, str] | None = None, reason: str = "X"
) -> None:
    head = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}", "Connection: close"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)


def reply(status: int, body: str | bytes = "", headers: dict[str, str] | None = None) -> Behaviour:
    data = body.encode() if isinstance(body, str) else body
    return lambda conn, _request, _stop: _answer(conn, status, data, headers)


def echo_credential(status: int, html: bool = False) -> Behaviour:
    """Answer `status` with a body that quotes the request's Authorization header back (a careless server)."""

    def behave(conn: socket.socket, request: Request, _stop: threading.Event) -> None:
        credential = request.authorization.removeprefix("Bearer ")
        if html:
            body = f"<html><body><h1>Internal error</h1><pre>request auth={credential}</pre></body></html>"
            _answer(conn, status, body.encode(), {"Content-Type": "text/html"})
        else:
            status_object = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "code": status,
                "message": f"token {credential} is not allowed to get /livez",
            }
            _answer(conn, status, json.dumps(status_object).encode(), {"Content-Type": "application/json"})

    return behave


def trickle_headers(interval: float = 0.1) -> Behaviour:
    """A status line and headers one byte at a time, forever (each byte well inside any read timeout)."""

    def behave(conn: socket.socket, _request: Request, stop: threading.Event) -> None:
        data = b"HTTP/1.1 200 OK\r\n" + b"X-Padding: " + b"a" * 100000
        for byte in data:
            if stop.wait(interval):
                return
            conn.sendall(bytes([byte]))

    return behave


def trickle_body(interval: float = 0.1, size: int = 100000) -> Behaviour:
    def behave(conn: socket.socket, _request: Request, stop: threading.Event) -> None:
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {size}\r\n\r\n".encode())
        conn.sendall(b"[+]ping ok\n")
        for _ in range(size):
            if stop.wait(interval):
                return
            conn.sendall(b"a")

    return behave


def hang() -> Behaviour:
    """Read the request, then say nothing until the server stops."""

    def behave(_conn: socket.socket, _request: Request, stop: threading.Event) -> None:
        stop.wait(60)

    return behave


def close_at_once() -> Behaviour:
    return lambda _conn, _request, _stop: None


def garbage() -> Behaviour:
    return lambda conn, _request, _stop: conn.sendall(b"\x00\x01this is not HTTP at all\r\n\r\n\xff\xfe")


def truncated() -> Behaviour:
    def behave(conn: socket.socket, _request: Request, _stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5000\r\n\r\n[+]ping ok\n[+]et")

    return behave


def huge_declared(size: int = 200 * 1024 * 1024) -> Behaviour:
    """Declares an enormous body (and starts sending it)."""

    def behave(conn: socket.socket, _request: Request, stop: threading.Event) -> None:
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {size}\r\n\r\n".encode())
        chunk = b"a" * 65536
        for _ in range(size // len(chunk)):
            if stop.is_set():
                return
            conn.sendall(chunk)

    return behave


def huge_chunked(total: int = 200 * 1024 * 1024) -> Behaviour:
    """An endless chunked body without any Content-Length."""

    def behave(conn: socket.socket, _request: Request, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"a" * 65536
        sent = 0
        while sent < total and not stop.is_set():
            conn.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            sent += len(chunk)

    return behave


def gzip_bomb(inflated: int = 20 * 1024 * 1024) -> Behaviour:
    body = gzip.compress(b"a" * inflated)
    return reply(200, body, {"Content-Type": "text/plain", "Content-Encoding": "gzip"})


def healthy() -> Behaviour:
    return reply(200, "[+]ping ok\n[+]etcd ok\nreadyz check passed\n", {"Content-Type": "text/plain"})


# -- behaviours of the byte budget (issue 20): bombs, endless pages and bodies, deep JSON, huge answers ---------


@functools.cache
def _gzip_of_zeros(size: int) -> bytes:
    """gzip of `size` zero bytes, made in 1 MiB steps (never holding `size` bytes): about size / 1000 bytes."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    return b"".join([*parts, packer.flush()])


def stacked_gzip_bomb(inflated: int = 1024 * 1024 * 1024, status: int = 200) -> Behaviour:
    """`Content-Encoding: gzip, gzip`: a few KB that inflate to `inflated` bytes in two steps (1 GiB by default)."""
    body = gzip.compress(_gzip_of_zeros(inflated), 9)
    return reply(status, body, {"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"})


def big_gzip_bomb(inflated: int = 1024 * 1024 * 1024, status: int = 200) -> Behaviour:
    """One gzip layer of `inflated` zero bytes (about 1 MB on the wire for 1 GiB)."""
    return reply(status, _gzip_of_zeros(inflated), {"Content-Type": "text/plain", "Content-Encoding": "gzip"})


def stacked_gzip(body: str, status: int = 200) -> Behaviour:
    """A small, honest body in two gzip layers: what Go's client would not decode."""
    return reply(
        status,
        gzip.compress(gzip.compress(body.encode())),
        {"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"},
    )


def endless_body(status: int = 200, interval: float = 0.0) -> Behaviour:
    """`status`, then a chunked body that never ends (64 KiB chunks, or one byte every `interval` seconds)."""

    def behave(conn: socket.socket, _request: Request, stop: threading.Event) -> None:
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
        chunk = b"1\r\na\r\n" if interval else f"{65536:x}\r\n".encode() + b"a" * 65536 + b"\r\n"
        while not stop.is_set():
            conn.sendall(chunk)
            if interval and stop.wait(interval):
                return

    return behave


def health_lines(count: int, status: int = 200, failing_every: int = 0) -> Behaviour:
    """A verbose health answer of `count` check lines (a million lines is about 20 MB), made as a block of 1,000
    lines repeated: the test process never holds a million line objects (a child's peak RSS, as wait4 reports
    it, starts from its parent's at fork)."""
    block_size = min(count, 1000)
    block = "".join(
        f"[-]check-{n} failed: reason withheld\n" if failing_every and n % failing_every == 0 else f"[+]check-{n} ok\n"
        for n in range(block_size)
    ).encode()
    body = block * (count // block_size) + b"readyz check passed\n"
    return reply(status, body, {"Content-Type": "text/plain"})


def deep_json(depth: int, status: int = 200, wrap: str = "list") -> Behaviour:
    """JSON nested `depth` levels deep: as a LIST's only item (`wrap="list"`) or as a bare value."""
    nested = "[" * depth + "]" * depth
    body = f'{{"kind":"List","apiVersion":"v1","metadata":{{}},"items":[{nested}]}}' if wrap == "list" else nested
    return reply(status, body, {"Content-Type": "application/json"})


class EndlessList:
    """A LIST whose pages never end: every page hands out a new `continue` token (or the same one, with
    `same_token`), padded to `padding` bytes, on one kept-alive connection. `sent` counts body bytes served."""

    def __init__(self, padding: int = 100_000, same_token: bool = False) -> None:
        self.padding = padding
        self.same_token = same_token
        self.sent = 0
        self.pages = 0

    def __call__(self, conn: socket.socket, _request: Request, stop: threading.Event) -> None:
        conn.settimeout(5)
        while not stop.is_set():
            self.pages += 1
            token = "again" if self.same_token else f"page-{self.pages}"
            body = json.dumps(
                {
                    "kind": "List",
                    "apiVersion": "v1",
                    "metadata": {"continue": token, "padding": "x" * self.padding},
                    "items": [],
                }
            ).encode()
            conn.sendall(
                f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            self.sent += len(body)
            if not _next_request(conn):
                return


def _next_request(conn: socket.socket) -> bool:
    """Read the next request's head on a kept-alive connection; False when the client went away."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            piece = conn.recv(65536)
        except OSError:
            return False
        if not piece:
            return False
        data += piece
    return True


def routes(table: dict[str, Behaviour], default: Behaviour | None = None) -> Behaviour:
    """Dispatch on the request path: the behaviour of the longest key that starts the path, else `default`
    (404 when none)."""
    fallback = default or reply(
        404, '{"kind":"Status","code":404,"message":"not found"}', {"Content-Type": "application/json"}
    )

    def behave(conn: socket.socket, request: Request, stop: threading.Event) -> None:
        path = request.path.split("?", 1)[0]
        matching = [key for key in table if path.startswith(key)]
        chosen = table[max(matching, key=len)] if matching else fallback
        chosen(conn, request, stop)

    return behave


@dataclass
class HostileServer:
    behaviour: Behaviour
    cert_file: Path | None = None
    key_file: Path | None = None
    requests: list[Request] = field(default_factory=list)
    max_header_bytes: int | None = None
    """When set, a request whose head is larger is answered 431 and not handed to the behaviour (as Go's
    net/http server does past its MaxHeaderBytes); it is not recorded in `requests` either."""
    _stop: threading.Event = field(default_factory=threading.Event)
    refused_large_headers: int = 0

    def __enter__(self) -> HostileServer:
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.1)
        self._context: ssl.SSLContext | None = None
        if self.cert_file and self.key_file:
            self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._context.load_cert_chain(self.cert_file, self.key_file)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def url(self) -> str:
        return f"{'https' if self._context else 'http'}://127.0.0.1:{self.port}"

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _address = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, raw: socket.socket) -> None:
        conn: socket.socket = raw
        try:
            raw.settimeout(5)
            if self._context is not None:
                conn = self._context.wrap_socket(raw, server_side=True)
            data = b""
            while b"\r\n\r\n" not in data:
                piece = conn.recv(65536)
                if not piece:
                    return
                data += piece
                if self.max_header_bytes is not None and len(data) > self.max_header_bytes:
                    self.refused_large_headers += 1
                    _answer(conn, 431, b"431 Request Header Fields Too Large", {"Content-Type": "text/plain"})
                    _drain_head(conn, data)  # so the client reads the answer rather than a reset
                    return
            head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            headers = {}
            for line in head[1:]:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
            request = Request(head[0], headers)
            self.requests.append(request)
            conn.settimeout(None)
            self.behaviour(conn, request, self._stop)
        except (OSError, ssl.SSLError):
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()


def _drain_head(conn: socket.socket, data: bytes) -> None:
    """Read (and drop) the rest of a request head, for at most 2 s."""
    conn.settimeout(2)
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in data[-65540:]:
            piece = conn.recv(65536)
            if not piece:
                return
            data = data[-4:] + piece


def silent_tcp() -> tuple[socket.socket, int]:
    """A listener that accepts into its backlog and never answers (a black hole after TCP connect)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    return listener, int(listener.getsockname()[1])


BEHAVIOURS: dict[str, Callable[[], Behaviour]] = {
    "hang": hang,
    "trickle-headers": trickle_headers,
    "trickle-body": trickle_body,
    "healthy": healthy,
}


def main(argv: list[str]) -> None:
    behaviour, cert, key = argv
    with HostileServer(BEHAVIOURS[behaviour](), Path(cert), Path(key)) as server:
        print(server.port, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin


if __name__ == "__main__":
    main(sys.argv[1:])
