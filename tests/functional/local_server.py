"""A real local HTTP server that records every request and answers from a script.

A plain module (not conftest.py) so test modules can import it by name: with every tier collected in one
pytest run, `conftest` is whichever tier's conftest loaded last.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    headers: Message  # case-insensitive, as HTTP headers are
    body: bytes


Reply = tuple[int, dict[str, str], bytes] | str
"""(status, headers, body), or "hang" to hold the request until the server shuts down."""


@dataclass
class LocalServer:
    """A loopback HTTP server that records requests; `script` answers them in order (last one repeats)."""

    responder: Callable[[Recorded], Reply] | None = None
    script: list[Reply] = field(default_factory=lambda: [(200, {}, b"OK")])
    requests: list[Recorded] = field(default_factory=list)
    _release: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                record = Recorded(self.command, self.path, self.headers, self.rfile.read(length))
                with owner._lock:
                    owner.requests.append(record)
                    index = len(owner.requests) - 1
                if owner.responder is not None:
                    reply = owner.responder(record)
                else:
                    reply = owner.script[min(index, len(owner.script) - 1)]
                if reply == "hang":
                    owner._release.wait(30)
                    return
                assert not isinstance(reply, str)
                status, headers, body = reply
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = _handle

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.socket.settimeout(1.0)  # never block in accept() after a reset connection (HeartbeatReceiver)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
