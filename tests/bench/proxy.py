"""The one place the benchmark counts what each contender costs the API server: a TLS-terminating proxy.

Every contender's kubeconfig points here. It offers only `http/1.1` (so requests can be counted alike), forwards
with ONE fixed identity (the admin token replaces any `Authorization`, so authentication costs the same), and
counts request lines (bodies skipped by their framing) and the raw bytes sent back, compressed as the server sent
them. `RequestFramer`, the pure part, is unit-tested in tests/unit/test_bench_harness.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

MAX_HEAD_BYTES: Final = 64 * 1024


class FramingError(ValueError):
    """The client sent something that is not an HTTP/1.1 request stream."""


@dataclass(frozen=True)
class RequestHead:
    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value
        return None

    @property
    def line(self) -> str:
        return f"{self.method} {self.target}"

    def encode(self, authorization: str | None) -> bytes:
        """The head as forwarded: the client's `Authorization` (if any) replaced by `authorization`."""
        lines = [f"{self.method} {self.target} {self.version}"]
        lines += [f"{key}: {value}" for key, value in self.headers if key.lower() != "authorization"]
        if authorization is not None:
            lines.append(f"Authorization: {authorization}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def parse_head(raw: bytes) -> RequestHead:
    """One request head (request line and header lines, without the blank line that ends it)."""
    text = raw.decode("latin-1")
    request_line, *header_lines = text.split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise FramingError(f"not an HTTP/1.x request line: {request_line[:80]!r}")
    headers: list[tuple[str, str]] = []
    for line in header_lines:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise FramingError(f"malformed header line: {line[:80]!r}")
        headers.append((name, value.strip()))
    return RequestHead(parts[0], parts[1], parts[2], tuple(headers))


@dataclass
class RequestFramer:
    """Splits a client's byte stream into request heads and body bytes, incrementally.

    `feed(data)` returns, in order, `RequestHead`s (one per request, counted by the caller) and `bytes` chunks to
    forward verbatim (bodies, chunk framing included). A body is framed by `Transfer-Encoding: chunked` (chunk
    sizes, extensions and trailers honoured) or `Content-Length`; a request with neither has no body (RFC 9112
    6.3: requests are never delimited by closing).
    """

    _buffer: bytearray = field(default_factory=bytearray)
    _state: str = "head"  # head | body | chunk-size | chunk-data | chunk-crlf | trailers
    _remaining: int = 0

    def feed(self, data: bytes) -> list[RequestHead | bytes]:
        self._buffer += data
        out: list[RequestHead | bytes] = []
        while True:
            item = self._step()
            if item is None:
                return out
            out.append(item)

    @property
    def idle(self) -> bool:
        """Between requests, with nothing buffered (a connection may close cleanly here)."""
        return self._state == "head" and not self._buffer

    def _counted(self, then: str) -> bytes | None:
        """Up to `_remaining` bytes of a body or chunk from the buffer; `then` is the state once all are read."""
        if not self._buffer:
            return None
        chunk = self._take(min(self._remaining, len(self._buffer)))
        self._remaining -= len(chunk)
        if not self._remaining:
            self._state = then
        return chunk

    def _take(self, count: int) -> bytes:
        chunk = bytes(self._buffer[:count])
        del self._buffer[:count]
        return chunk

    def _line(self) -> bytes | None:
        end = self._buffer.find(b"\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEAD_BYTES:
                raise FramingError("line longer than 64 KiB")
            return None
        return self._take(end + 2)

    def _step(self) -> RequestHead | bytes | None:
        if self._state == "head":
            while self._buffer.startswith(b"\r\n"):  # RFC 9112 2.2: ignore empty lines before a request
                del self._buffer[:2]
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEAD_BYTES:
                    raise FramingError("request head longer than 64 KiB")
                return None
            head = parse_head(self._take(end + 4)[:-4])
            encoding = (head.header("Transfer-Encoding") or "").lower()
            if "chunked" in encoding:
                self._state = "chunk-size"
            else:
                length = head.header("Content-Length")
                try:
                    self._remaining = int(length) if length is not None else 0
                except ValueError:
                    raise FramingError(f"bad Content-Length {length!r}") from None
                if self._remaining < 0:
                    raise FramingError(f"bad Content-Length {length!r}")
                self._state = "body" if self._remaining else "head"
            return head
        if self._state == "body":
            return self._counted(then="head")
        if self._state == "chunk-size":
            line = self._line()
            if line is None:
                return None
            size_text = line[:-2].split(b";", 1)[0].strip()
            try:
                self._remaining = int(size_text, 16)
            except ValueError:
                raise FramingError(f"bad chunk size {size_text[:20]!r}") from None
            self._state = "chunk-data" if self._remaining else "trailers"
            return line
        if self._state == "chunk-data":
            return self._counted(then="chunk-crlf")
        if self._state == "chunk-crlf":
            if len(self._buffer) < 2:
                return None
            crlf = self._take(2)
            if crlf != b"\r\n":
                raise FramingError("chunk data not followed by CRLF")
            self._state = "chunk-size"
            return crlf
        # trailers: header lines until an empty line
        line = self._line()
        if line is None:
            return None
        if line == b"\r\n":
            self._state = "head"
        return line


@dataclass(frozen=True)
class Counts:
    """What the API server sent one contender, counted at the proxy."""

    requests: int = 0
    bytes_to_client: int = 0
    bytes_from_client: int = 0
    connections: int = 0
    request_lines: tuple[str, ...] = ()

    def minus(self, earlier: Counts) -> Counts:
        return Counts(
            self.requests - earlier.requests,
            self.bytes_to_client - earlier.bytes_to_client,
            self.bytes_from_client - earlier.bytes_from_client,
            self.connections - earlier.connections,
            self.request_lines[len(earlier.request_lines) :],
        )


class CountingProxy:
    """The proxy, run on its own event loop thread; `measure()` brackets one contender's run."""

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        upstream_ca: str,
        authorization: str,
        server_context: ssl.SSLContext,
        listen_host: str = "127.0.0.1",
    ) -> None:
        self.upstream_host, self.upstream_port = upstream_host, upstream_port
        self._authorization = authorization
        self._client_context = ssl.create_default_context(cafile=upstream_ca)
        self._client_context.set_alpn_protocols(["http/1.1"])
        server_context.set_alpn_protocols(["http/1.1"])
        self._server_context = server_context
        self._listen_host = listen_host
        self._lock = threading.Lock()
        self._requests = 0
        self._to_client = 0
        self._from_client = 0
        self._connections = 0
        self._lines: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # Counting -----------------------------------------------------------------------------------------------
    def counts(self) -> Counts:
        with self._lock:
            return Counts(self._requests, self._to_client, self._from_client, self._connections, tuple(self._lines))

    @contextlib.contextmanager
    def measure(self) -> Iterator[list[Counts]]:
        """`with proxy.measure() as box:` ... then `box[0]` holds what passed during the block."""
        box: list[Counts] = []
        before = self.counts()
        yield box
        box.append(self.counts().minus(before))

    def _count_request(self, head: RequestHead) -> None:
        with self._lock:
            self._requests += 1
            self._lines.append(head.line)

    def _count(self, to_client: int = 0, from_client: int = 0) -> None:
        with self._lock:
            self._to_client += to_client
            self._from_client += from_client

    # Serving ------------------------------------------------------------------------------------------------
    def start(self) -> CountingProxy:
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, self._listen_host, 0, ssl=self._server_context, limit=1 << 20)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            try:
                loop.run_forever()
                self._server.close()
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(self._server.wait_closed())
            finally:
                loop.close()

        self._thread = threading.Thread(target=serve, name="bench-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the counting proxy did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> CountingProxy:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self._connections += 1
        writers = [client_writer]
        tasks: list[asyncio.Task[None]] = []
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                self.upstream_host,
                self.upstream_port,
                ssl=self._client_context,
                server_hostname=self.upstream_host,
                limit=1 << 20,
            )
            writers.append(upstream_writer)
            tasks = [
                asyncio.create_task(self._client_to_server(client_reader, upstream_writer)),
                asyncio.create_task(self._server_to_client(upstream_reader, client_writer)),
            ]
            # Either side closing ends the connection: HTTP clients do not half-close, and the API server closes
            # only when it is done with the connection.
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except OSError:
            pass
        finally:
            for task in tasks:
                task.cancel()
            for writer in writers:
                writer.close()
            for writer in writers:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(writer.wait_closed(), 2)

    async def _client_to_server(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        framer = RequestFramer()
        while True:
            data = await reader.read(1 << 16)
            if not data:
                return
            self._count(from_client=len(data))
            try:
                items = framer.feed(data)
            except FramingError:
                return
            for item in items:
                if isinstance(item, RequestHead):
                    self._count_request(item)
                    writer.write(item.encode(self._authorization))
                else:
                    writer.write(item)
            await writer.drain()

    async def _server_to_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                return
            self._count(to_client=len(data))
            writer.write(data)
            await writer.drain()


def throwaway_tls(directory: Path, host: str = "127.0.0.1") -> tuple[ssl.SSLContext, Path]:
    """A serving context for the proxy from a CA made here and now (never the sandbox's keys), and that CA's file.

    The contenders' kubeconfigs trust only this CA, so they verify TLS to the proxy exactly as to an API server.
    Valid for a year, so apiserver-cert-expiry (which judges the chain it is presented: the proxy's) is healthy.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "outpost-bench-proxy-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "outpost-bench-proxy")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = directory / "ca.crt", directory / "proxy.crt", directory / "proxy.key"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    return context, ca_path
