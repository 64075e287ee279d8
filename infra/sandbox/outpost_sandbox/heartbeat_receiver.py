"""A local Vigilmon stand-in: records heartbeat pings and maintenance calls, for the demo and e2e tests.

It speaks the part of Vigilmon's interface Outpost uses (docs/contracts.md "Vigilmon interface"): a
heartbeat is a GET or POST to the monitor's URL, here `http://127.0.0.1:PORT/ping/<monitor>/<token>`; maintenance is
`POST /api/maintenance` with `Authorization: Bearer <key>` and `{"monitor_id", "duration_minutes"}`.
It listens on loopback only. Tokens in ping URLs are random per run, like real heartbeat URLs.
"""

from __future__ import annotations

import http.server
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType


@dataclass(frozen=True)
class Ping:
    monitor: str
    method: str
    at: float


@dataclass
class HeartbeatReceiver:
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    pings: list[Ping] = field(default_factory=list)
    maintenance: list[dict[str, object]] = field(default_factory=list)
    _tokens: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> HeartbeatReceiver:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._ping()

            def do_POST(self) -> None:
                if self.path == "/api/maintenance":
                    self._maintenance()
                else:
                    self._ping()

            def _ping(self) -> None:
                parts = self.path.strip("/").split("/")
                if len(parts) == 3 and parts[0] == "ping" and receiver._tokens.get(parts[1]) == parts[2]:
                    with receiver._lock:
                        receiver.pings.append(Ping(parts[1], self.command, time.time()))
                    self._answer(200, {"ok": True})
                else:
                    self._answer(404, {"error": "unknown heartbeat"})

            def _maintenance(self) -> None:
                if self.headers.get("Authorization") != f"Bearer {receiver.api_key}":
                    self._answer(401, {"error": "unauthorized"})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._answer(400, {"error": "body is not JSON"})
                    return
                if not isinstance(body, dict) or not isinstance(body.get("duration_minutes"), int):
                    self._answer(400, {"error": "monitor_id and duration_minutes required"})
                    return
                with receiver._lock:
                    receiver.maintenance.append(body)
                self._answer(200, {"ok": True})

            def _answer(self, status: int, body: dict[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A client that connects and resets before accept() leaves select() saying "readable" and a blocking
        # accept() waiting forever, so shutdown() never returns: a timeout turns that into a skipped poll.
        # (The accepted sockets stay blocking: socket.accept restores blocking when the listener has a timeout.)
        self._server.socket.settimeout(1.0)
        threading.Thread(target=self._server.serve_forever, daemon=True, name="heartbeat-receiver").start()
        return self

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("receiver not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def url_for(self, monitor: str) -> str:
        """A fresh heartbeat URL (with a secret token) for `monitor`."""
        token = self._tokens.setdefault(monitor, secrets.token_urlsafe(12))
        return f"{self.base_url}/ping/{monitor}/{token}"

    def pings_for(self, monitor: str) -> int:
        with self._lock:
            return sum(1 for ping in self.pings if ping.monitor == monitor)

    def reset(self) -> None:
        with self._lock:
            self.pings.clear()
            self.maintenance.clear()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> HeartbeatReceiver:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
