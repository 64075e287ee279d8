"""Real local HTTPS servers for exercising the cluster seam's failure handling.

Each server is a genuine TLS listener on 127.0.0.1 with a certificate from the sandbox's PKI module
(`outpost_sandbox.pki.localhost_tls`), so the client's real ssl stack, timeouts and error mapping
are what is tested (no transport patching).
"""

from __future__ import annotations

import http.server
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from outpost_sandbox.pki import LocalhostTls

Handler = Callable[[http.server.BaseHTTPRequestHandler], tuple[int, str, str]]


@contextmanager
def https_server(pki: LocalhostTls, respond: Handler) -> Iterator[tuple[str, list[str]]]:
    """Serve `respond(request) -> (status, content_type, body)`; yields (base URL, seen request lines).

    A seen line is the path for a GET and `METHOD path` otherwise; a request body is `request.body`.
    """
    seen: list[str] = []

    class RequestHandler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path if self.command == "GET" else f"{self.command} {self.path}")
            length = int(self.headers.get("Content-Length") or 0)
            self.body = self.rfile.read(length) if length else b""
            status, content_type, body = respond(self)
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = do_PATCH = do_PUT = do_DELETE = do_GET

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.cert_file, pki.key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.socket.settimeout(1.0)  # never block in accept() after a reset connection (see HeartbeatReceiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def silent_server() -> Iterator[str]:
    """Accepts TCP connections and never says a word (a hung API server or a black-holed LB)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


def closed_port() -> int:
    """A loopback port with nothing listening (bound then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
