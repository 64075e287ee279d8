"""The kit's fake API server (`kit.FakeApiServer`) served over real TLS on 127.0.0.1.

Why: the fault matrix runs Outpost in a child process (to measure its peak memory and wall time), so the
fake API server the unit tier puts behind `httpx.MockTransport` must answer on a real socket instead. Every
request is turned into an `httpx.Request`, answered by the very same `FakeApiServer.handler` (LIST,
pagination, selectors, 404s, canned health answers), and written back.
"""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from kit.fake_cluster import FakeApiServer


class ServedApi:
    """`api` on `https://127.0.0.1:<port>`, with `cert_file`/`key_file` as its serving pair."""

    def __init__(self, api: FakeApiServer, cert_file: Path, key_file: Path) -> None:
        self.api = api
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(str(cert_file), str(key_file))
        self.authorizations: list[str] = []
        self._stop = threading.Event()

    def __enter__(self) -> ServedApi:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                owner.authorizations.append(self.headers.get("Authorization", ""))
                request = httpx.Request(
                    "GET", f"https://127.0.0.1{self.path}", headers={"Accept": self.headers.get("Accept", "*/*")}
                )
                try:
                    answer = owner.api.handler(request)
                except httpx.ReadTimeout:  # `hang(path)`: hold the request, as a stuck backend does
                    owner._stop.wait(60)
                    return
                except httpx.ConnectError:  # `unreachable(path)`: drop the connection unanswered
                    self.close_connection = True
                    return
                body = answer.read()
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.socket = self._context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
