"""A heartbeat receiver for the demo and e2e tests: the Vigilmon stand-in without alert timing.

`url_for(check)` makes a recording-only monitor named after the check (it never alerts) and returns its secret
heartbeat URL (`/heartbeat/<token>`, as the stand-in serves it); `pings_for(check)` counts its pings;
maintenance calls (`POST /api/maintenance`, bearer key) are recorded in `maintenance` for any monitor id.
Everything else, including the real HTTP server on loopback, is `outpost_sandbox.vigilmon.Vigilmon`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from outpost_sandbox.vigilmon import Ping, Vigilmon

__all__ = ["HeartbeatReceiver", "Ping"]


@dataclass
class HeartbeatReceiver(Vigilmon):
    accept_unknown_monitors: bool = field(default=True)

    @property
    def maintenance(self) -> list[dict[str, object]]:
        """Every accepted maintenance call's body, in order."""
        return self.maintenance_calls

    def url_for(self, monitor: str) -> str:
        """The heartbeat URL (with a secret token) of `monitor`, created as a recording-only monitor if new."""
        self.add_monitor(monitor, check=monitor)
        return self.heartbeat_url(monitor)

    def reset(self) -> None:
        with self._lock:
            self.pings.clear()
            self.maintenance_calls.clear()
            self.events.clear()
