"""Runs checks on their schedules as the platform does: each check's real entry module, its Lambda handler,
called with a scheduled event, on a clock that may run faster than real time.

Guarantees:
- what runs is `functions/<check>/main.py`, imported once per scheduled check (the cold start: settings from
  `$OUTPOST_CONFIG`) and its `handler` called with an EventBridge "Scheduled Event" every schedule (the warm
  instance); a run that raises (`CheckUnhealthy` for failed/error, anything else) is recorded as unhealthy,
  as the platform's Errors metric counts it;
- runs start on the schedule whether or not the previous one has ended (each in its own thread, as the platform
  starts a new invocation), so a slow run never shifts the schedule;
- time is a `ScaledClock`: `scale` clock seconds pass per real second, so a 1-minute schedule at scale 10 runs
  every 6 real seconds. Every time recorded is in the clock's seconds (the "real units" of the deployed
  schedule), and a run's duration is its real duration times the scale, so the schedule, the run and the
  monitor's grace stay in one unit; `ScaledClock.real_time()` runs it at real time for a while (a fault's break or
  heal), and each schedule waits in short steps, so it follows.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Final

FUNCTIONS_DIR: Final = Path(__file__).resolve().parents[3] / "functions"
"""functions/<module>/main.py, the entry modules the deployment ships (infra/sandbox/outpost_sandbox -> repo)."""

SCHEDULED_EVENT: Final[dict[str, Any]] = {
    "version": "0",
    "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2015-10-08T16:53:06Z",
    "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/my-scheduled-rule"],
    "detail": {},
}
"""The EventBridge scheduled event, in the shape of the AWS documentation's sample (its example ids)."""

_fresh = itertools.count()

WAIT_STEP_SECONDS: Final = 0.25
"""Real seconds a schedule waits at most before it looks at the clock again."""

Handler = Callable[[Any, Any], Any]
"""A function's handler: (event, context) -> its answer; raising counts the invocation as failed."""


class ScaledClock:
    """Seconds that pass `scale` times faster than real time, from `origin` (default: the real time now).

    `real_time()` slows it to real time for a while (seconds then pass as real ones), and back: what a sandbox
    operation takes in real time (a fault's break or heal, a manager's restart) then takes as long in clock time,
    instead of `scale` times as long."""

    def __init__(self, scale: float = 1.0, origin: float | None = None) -> None:
        if scale <= 0:
            raise ValueError("scale must be > 0")
        self._lock = threading.Lock()
        self._base = (time.time() if origin is None else origin, time.monotonic(), scale)

    @property
    def scale(self) -> float:
        return self._base[2]

    def __call__(self) -> float:
        origin, started, scale = self._base
        return origin + (time.monotonic() - started) * scale

    def rescale(self, scale: float) -> None:
        """From now on, `scale` clock seconds per real second (the clock never jumps)."""
        if scale <= 0:
            raise ValueError("scale must be > 0")
        with self._lock:
            self._base = (self(), time.monotonic(), scale)

    @contextlib.contextmanager
    def real_time(self) -> Iterator[None]:
        """Inside, the clock runs at real time; after, at its scale again."""
        scale = self.scale
        self.rescale(1.0)
        try:
            yield
        finally:
            self.rescale(scale)

    def real_seconds(self, clock_seconds: float) -> float:
        """How long `clock_seconds` of this clock take in real time, at its scale now."""
        return clock_seconds / self.scale


@dataclass(frozen=True)
class Run:
    check: str
    started_at: float
    ended_at: float
    healthy: bool
    status: str
    summary: str

    @property
    def seconds(self) -> float:
        return self.ended_at - self.started_at


def entry_module(check: str) -> Path:
    return FUNCTIONS_DIR / check.replace("-", "_") / "main.py"


def import_entry(check: str) -> ModuleType:
    """`functions/<check>/main.py` imported as Lambda imports it on a cold start (a new module object)."""
    path = entry_module(check)
    spec = importlib.util.spec_from_file_location(f"outpost_scheduled_{next(_fresh)}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"no entry module for check {check!r} at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def invoke(handler: Handler, check: str, clock: Callable[[], float]) -> Run:
    """One scheduled invocation of `handler`, judged as the platform judges it: raising is unhealthy."""
    started = clock()
    try:
        answer = handler(SCHEDULED_EVENT, None)
    except Exception as error:  # noqa: BLE001 - CheckUnhealthy, or anything else: the platform counts either
        result = getattr(error, "result", None)
        status = result.get("status", "error") if isinstance(result, dict) else "error"
        summary = result.get("summary", "") if isinstance(result, dict) else type(error).__name__
        return Run(check, started, clock(), False, str(status), str(summary))
    status = answer.get("status", "?") if isinstance(answer, dict) else "?"
    summary = answer.get("summary", "") if isinstance(answer, dict) else ""
    return Run(check, started, clock(), status in ("ok", "degraded"), str(status), str(summary))


@dataclass
class Scheduler:
    """Every `schedules` check (name -> schedule in clock seconds) run on its schedule until `stop()`."""

    schedules: dict[str, float]
    clock: ScaledClock = field(default_factory=ScaledClock)
    runs: list[Run] = field(default_factory=list)
    on_run: Callable[[Run], None] | None = None
    handler_for: Callable[[str], Handler] | None = None
    """check -> its handler, made once at start (the cold start); default: the entry module's Lambda `handler`."""
    _handlers: dict[str, Handler] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _in_flight: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Scheduler:
        """Import every entry module (cold starts, in the caller's thread so a bad configuration raises here),
        then run each check now and every schedule after."""
        for check in self.schedules:
            self._handlers[check] = (
                self.handler_for(check) if self.handler_for is not None else import_entry(check).handler
            )
        origin = self.clock()
        for check, every in self.schedules.items():
            thread = threading.Thread(target=self._loop, args=(check, every, origin), daemon=True, name=f"sch-{check}")
            thread.start()
            self._threads.append(thread)
        return self

    def _loop(self, check: str, every: float, origin: float) -> None:
        for n in itertools.count():
            due = origin + n * every
            # Waited in short steps: the clock's scale may change meanwhile (`ScaledClock.real_time`).
            while (wait := self.clock.real_seconds(due - self.clock())) > 0:
                if self._stop.wait(min(wait, WAIT_STEP_SECONDS)):
                    return
            run = threading.Thread(target=self._run, args=(check,), daemon=True, name=f"run-{check}")
            with self._lock:  # a run starts before `stop()` looks at what is in flight, or not at all
                if self._stop.is_set():
                    return
                self._in_flight = [thread for thread in self._in_flight if thread.is_alive()] + [run]
                run.start()

    def _run(self, check: str) -> None:
        run = invoke(self._handlers[check], check, self.clock)
        with self._lock:
            self.runs.append(run)
        if self.on_run is not None:
            self.on_run(run)

    def runs_of(self, check: str) -> list[Run]:
        with self._lock:
            return [run for run in self.runs if run.check == check]

    def stop(self, runs_timeout: float = 120.0) -> None:
        """No run starts after this; the runs under way are awaited (each ends by its deadline), within
        `runs_timeout` in all."""
        self._stop.set()
        deadline = time.monotonic() + runs_timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()
        while True:
            with self._lock:
                self._in_flight = [thread for thread in self._in_flight if thread.is_alive()]
                alive = list(self._in_flight)
            if not alive or time.monotonic() >= deadline:
                return
            for thread in alive:
                thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Scheduler:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
