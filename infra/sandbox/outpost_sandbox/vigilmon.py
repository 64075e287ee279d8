"""A local Vigilmon stand-in: heartbeat monitors that alert, resolve and honour maintenance windows.

It behaves as the tutorials describe the service (docs/contracts.md "Vigilmon interface"), over real HTTP on
loopback, so the product's own clients talk to it unchanged:

- monitors are created from `outpost monitors --format json` (`create_monitors`): each gets a secret heartbeat
  URL `http://127.0.0.1:PORT/heartbeat/<token>` (the tutorials' shape); a GET or POST to it is a ping, any
  other token is a 404;
- a monitor alerts (records one `AlertEvent` of kind "alert") when its last ping, or its creation if it never
  pinged, is older than `interval_seconds + grace_seconds`, and resolves (one "resolve" event) on the next
  ping; nothing is recorded twice for one outage;
- `POST /api/maintenance` with `Authorization: Bearer <key>` and `{"monitor_id", "duration_minutes"}` opens a
  window of that many minutes (0 ends an open one); inside a window a monitor never alerts, after it the
  overdue rule applies again at once (a check still failing alerts when the window ends);
- `fail_maintenance`, when set, may answer a maintenance call with a status of its choosing instead (a 429 for
  one monitor, a 503 for another's end): that call is neither recorded nor applied, as a refused request;
- time comes from an injectable clock (seconds, any origin), so tests can run hours of monitor time in
  seconds; `evaluate()` applies the alert rule now, and `watch()` runs it on a background thread.
"""

from __future__ import annotations

import http.server
import json
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self

Clock = Callable[[], float]


@dataclass(frozen=True)
class Ping:
    monitor: str
    method: str
    at: float


@dataclass(frozen=True)
class AlertEvent:
    """An alert (the monitor went overdue) or its resolve (the next ping), at clock time `at`."""

    monitor: str
    check: str | None
    kind: Literal["alert", "resolve"]
    at: float
    last_ping_at: float | None


@dataclass
class Monitor:
    """One heartbeat monitor; `interval_seconds` None means it only records pings (never alerts)."""

    key: str
    """The monitor id maintenance calls name (the configured `monitor_id`, else the monitor's name)."""
    name: str
    check: str | None
    interval_seconds: float | None
    grace_seconds: float
    token: str
    created_at: float
    last_ping_at: float | None = None
    maintenance_until: float | None = None
    alerting: bool = False

    def overdue(self, now: float) -> bool:
        if self.interval_seconds is None:
            return False
        since = self.last_ping_at if self.last_ping_at is not None else self.created_at
        return now - since > self.interval_seconds + self.grace_seconds

    def in_maintenance(self, now: float) -> bool:
        return self.maintenance_until is not None and now < self.maintenance_until


@dataclass
class Vigilmon:
    clock: Clock = time.time
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    accept_unknown_monitors: bool = False
    """Record maintenance calls for monitor ids it does not hold (the bare heartbeat receiver's use); a real
    account answers 404 to those, and so does the stand-in by default."""
    fail_maintenance: Callable[[str, int], int | None] | None = None
    """(monitor_id, duration_minutes) -> a non-2xx status to answer instead, or None to serve the call."""
    pings: list[Ping] = field(default_factory=list)
    events: list[AlertEvent] = field(default_factory=list)
    maintenance_calls: list[dict[str, object]] = field(default_factory=list)
    monitors: dict[str, Monitor] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _server: http.server.ThreadingHTTPServer | None = None
    _stop_watch: threading.Event = field(default_factory=threading.Event)
    _watcher: threading.Thread | None = None

    # -- monitors ---------------------------------------------------------------------------------------------

    def add_monitor(
        self,
        key: str,
        *,
        name: str | None = None,
        check: str | None = None,
        interval_seconds: float | None = None,
        grace_seconds: float = 0.0,
    ) -> Monitor:
        """The monitor `key` (created now if new, its timing updated if given again)."""
        with self._lock:
            existing = self.monitors.get(key)
            if existing is not None:
                if interval_seconds is not None:
                    existing.interval_seconds, existing.grace_seconds = interval_seconds, grace_seconds
                return existing
            created = Monitor(
                key=key,
                name=name or key,
                check=check,
                interval_seconds=interval_seconds,
                grace_seconds=grace_seconds,
                token=secrets.token_urlsafe(12),
                created_at=self.clock(),
            )
            self.monitors[key] = created
            return created

    def create_monitors(self, document: Mapping[str, Any]) -> dict[str, Monitor]:
        """Create every monitor of an `outpost monitors --format json` document; check name -> monitor."""
        created = {}
        for entry in document["monitors"]:
            if entry.get("type") != "heartbeat":
                raise ValueError(f"monitor {entry.get('name')!r}: only heartbeat monitors exist here")
            created[entry["check"]] = self.add_monitor(
                entry.get("monitor_id") or entry["name"],
                name=entry["name"],
                check=entry["check"],
                interval_seconds=float(entry["interval_seconds"]),
                grace_seconds=float(entry["grace_seconds"]),
            )
        return created

    def monitor_for(self, check: str) -> Monitor:
        with self._lock:
            for monitor in self.monitors.values():
                if monitor.check == check:
                    return monitor
        raise KeyError(f"no monitor for check {check!r}")

    def heartbeat_url(self, key: str) -> str:
        """The secret heartbeat URL of monitor `key`."""
        return f"{self.base_url}/heartbeat/{self.monitors[key].token}"

    # -- the alert rule ---------------------------------------------------------------------------------------

    def evaluate(self) -> list[AlertEvent]:
        """Apply the alert rule at the clock's now; the events it recorded."""
        now = self.clock()
        fired = []
        with self._lock:
            for monitor in self.monitors.values():
                if monitor.alerting or monitor.in_maintenance(now) or not monitor.overdue(now):
                    continue
                monitor.alerting = True
                event = AlertEvent(monitor.key, monitor.check, "alert", now, monitor.last_ping_at)
                self.events.append(event)
                fired.append(event)
        return fired

    def watch(self, every_seconds: float = 0.05) -> None:
        """Evaluate on a background thread every `every_seconds` of real time until `stop()`."""
        if self._watcher is not None:
            return
        self._stop_watch.clear()

        def loop() -> None:
            while not self._stop_watch.wait(every_seconds):
                self.evaluate()

        self._watcher = threading.Thread(target=loop, daemon=True, name="vigilmon-watch")
        self._watcher.start()

    def events_for(self, check: str, kind: str | None = None) -> list[AlertEvent]:
        with self._lock:
            return [e for e in self.events if e.check == check and (kind is None or e.kind == kind)]

    def pings_for(self, key: str) -> int:
        with self._lock:
            return sum(1 for ping in self.pings if ping.monitor == key)

    # -- what the HTTP handler calls --------------------------------------------------------------------------

    def _ping(self, token: str, method: str) -> bool:
        now = self.clock()
        with self._lock:
            monitor = next((m for m in self.monitors.values() if secrets.compare_digest(m.token, token)), None)
            if monitor is None:
                return False
            self.pings.append(Ping(monitor.key, method, now))
            if monitor.alerting:
                monitor.alerting = False
                self.events.append(AlertEvent(monitor.key, monitor.check, "resolve", now, monitor.last_ping_at))
            monitor.last_ping_at = now
            return True

    def _maintenance(self, body: dict[str, object]) -> int:
        monitor_id, minutes = body.get("monitor_id"), body.get("duration_minutes")
        if not isinstance(monitor_id, str) or not monitor_id:
            return 400
        if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes < 0:
            return 400
        if self.fail_maintenance is not None:
            injected = self.fail_maintenance(monitor_id, minutes)
            if injected is not None:
                return injected
        now = self.clock()
        with self._lock:
            monitor = self.monitors.get(monitor_id)
            if monitor is None and not self.accept_unknown_monitors:
                return 404
            self.maintenance_calls.append(body)
            if monitor is not None:
                monitor.maintenance_until = now + 60 * minutes if minutes else None
        return 200

    # -- server -----------------------------------------------------------------------------------------------

    def start(self) -> Self:
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._heartbeat()

            def do_POST(self) -> None:
                if self.path == "/api/maintenance":
                    self._maintenance()
                else:
                    self._heartbeat()

            def _heartbeat(self) -> None:
                parts = self.path.strip("/").split("/")
                if len(parts) == 2 and parts[0] == "heartbeat" and service._ping(parts[1], self.command):
                    self._answer(200, {"ok": True})
                else:
                    self._answer(404, {"error": "unknown heartbeat"})

            def _maintenance(self) -> None:
                expected = f"Bearer {service.api_key}".encode()
                if not secrets.compare_digest(self.headers.get("Authorization", "").encode(), expected):
                    self._answer(401, {"error": "unauthorized"})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._answer(400, {"error": "body is not JSON"})
                    return
                status = service._maintenance(body) if isinstance(body, dict) else 400
                errors = {400: "monitor_id and duration_minutes (>= 0) required", 404: "unknown monitor"}
                self._answer(status, {"ok": True} if status == 200 else {"error": errors.get(status, "refused")})

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
        threading.Thread(target=self._server.serve_forever, daemon=True, name="vigilmon-standin").start()
        return self

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("Vigilmon stand-in not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def api_url(self) -> str:
        """The `vigilmon.api_url` an environment file names (the client appends `/maintenance`)."""
        return f"{self.base_url}/api"

    def stop(self) -> None:
        if self._watcher is not None:
            self._stop_watch.set()
            self._watcher.join(5)
            self._watcher = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
