"""`outpost sandbox alert-times`: time from fault to alert, measured on the sandbox for every catalogue fault.

For each fault (and each target it takes) and each check it fails, a lane: the Vigilmon stand-in with the
check's monitor exactly as `outpost monitors` defines it for the shipped `local` environment (pointed at this
sandbox), and the scheduler running the check's real entry module on its schedule, both on one scaled clock
(a schedule lasts `--period` real seconds). Then: break, wait for the alert, heal, wait for the resolve.

Reported per check and fault, in the clock's seconds (the deployed schedule's real units): break to the first
failing run (its start) and to the alert; heal to the resolve; and the model's worst case, schedule + run +
grace, with the longest healthy run measured. Times count from the start of `break`/`heal` (the fault takes effect
somewhere inside that call, whose length is reported too) and the stand-in sees an alert up to one evaluation
of its rule late, so a measured alert is within the model when it is at most worst case + break time + that
evaluation period. The fault is broken right after each check's first ping, the worst phase for the model. A
fault the shipped configuration does not catch shows no failing run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from outpost import secrets
from outpost.cluster import warm
from outpost.config import environment_file
from outpost.settings import CONFIG_ENV, ENVIRONMENT_ENV, load_settings
from outpost.tooling import monitors
from outpost_sandbox import faults
from outpost_sandbox.cluster import Sandbox
from outpost_sandbox.scheduler import ScaledClock, Scheduler
from outpost_sandbox.state import pointed_at
from outpost_sandbox.vigilmon import Vigilmon

DEFAULT_PERIOD_SECONDS: Final = 6.0
"""Real seconds per schedule: a 1-minute check runs every 6 s (scale 10), a 60-minute one every 6 s too."""


@dataclass(frozen=True)
class Measurement:
    fault: str
    target: str | None
    check: str
    scale: float
    schedule_seconds: float
    grace_seconds: float
    run_seconds: float
    """The longest healthy run measured in the lane (clock seconds)."""
    break_seconds: float
    """How long `break` took: the fault took effect somewhere inside it."""
    first_failing_seconds: float | None
    alert_seconds: float | None
    resolve_seconds: float | None
    note: str = ""
    evaluation_seconds: float = 0.0
    """How often the stand-in applies its alert rule (clock seconds): an alert is seen up to that late, as
    Vigilmon's own checking cadence delays a real one."""

    @property
    def worst_case_seconds(self) -> float:
        return self.schedule_seconds + self.run_seconds + self.grace_seconds

    @property
    def within_model(self) -> bool:
        slack = self.break_seconds + self.evaluation_seconds
        return self.alert_seconds is not None and self.alert_seconds <= self.worst_case_seconds + slack

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "worst_case_seconds": self.worst_case_seconds, "within_model": self.within_model}


@dataclass
class Lane:
    """One check's stand-in monitor and scheduler, on their own scaled clock."""

    check: str
    monitor: dict[str, Any]
    clock: ScaledClock
    vigilmon: Vigilmon
    scheduler: Scheduler
    evaluate_every: float
    """Real seconds between the stand-in's evaluations of its alert rule."""

    def healthy_pings(self) -> int:
        return self.vigilmon.pings_for(self.vigilmon.monitor_for(self.check).key)

    def first_event(self, kind: str, after: float) -> float | None:
        return next((e.at for e in self.vigilmon.events_for(self.check, kind) if e.at >= after), None)

    def max_run_seconds(self) -> float:
        """The longest healthy run: how late the last ping before a fault can come (a failing run never pings)."""
        return max((run.seconds for run in self.scheduler.runs_of(self.check) if run.healthy), default=0.0)


def environment_for(
    state_dir: Path, directory: Path | None = None, params: dict[str, dict[str, Any]] | None = None
) -> Path:
    """The shipped `local` environment pointed at the sandbox in `state_dir`, written to `directory` (default
    `<state_dir>/alert-times`; the scheduler's entry modules read it from `$OUTPOST_CONFIG`); `params` are
    merged into those checks' params."""
    environment: dict[str, Any] = pointed_at(yaml.safe_load(environment_file("local").read_text()), state_dir)
    for check, extra in (params or {}).items():
        entry = environment["checks"][check]
        entry["params"] = {**entry.get("params", {}), **extra}
    path = (directory or state_dir / "alert-times") / "local.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(environment, sort_keys=False))
    return path


def heartbeat_variable(check: str) -> str:
    """The `env:` reference local.yaml uses for a check's heartbeat URL."""
    return "OUTPOST_HEARTBEAT_" + check.upper().replace("-", "_")


@contextlib.contextmanager
def function_environment(config: Path, checks: Sequence[str], extra: Mapping[str, str] | None = None) -> Iterator[None]:
    """The process as the checks' functions see it: `$OUTPOST_CONFIG` is `config`, `extra` variables set, nothing
    resolved or followed by an earlier run cached, and stdout (the functions' JSON log lines) appended to
    `runs.log` beside `config`; on exit the variables named here (each check's heartbeat variable among them)
    restored. `say` callers bind their stream before this."""
    names = [CONFIG_ENV, ENVIRONMENT_ENV, *(heartbeat_variable(check) for check in checks), *(extra or {})]
    saved = {name: os.environ.get(name) for name in names}
    os.environ[CONFIG_ENV] = str(config)
    os.environ.pop(ENVIRONMENT_ENV, None)
    os.environ.update(extra or {})
    # New function instances: nothing an earlier run of this process resolved (a heartbeat URL of another
    # stand-in) or followed (a watch) carries over, as nothing carries over a cold start.
    secrets.clear_cache()
    warm.forget()
    try:
        with (config.parent / "runs.log").open("a") as function_log, contextlib.redirect_stdout(function_log):
            yield
    finally:
        secrets.clear_cache()
        warm.forget()
        for name, value in saved.items():  # the process's environment as it was
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def lanes(config: Path, checks: Sequence[str], period_seconds: float) -> Iterator[dict[str, Lane]]:
    """A started lane per check: monitor created, heartbeat URL in the environment, scheduler running; on exit
    every lane stopped and the environment variables set here restored."""
    document = monitors.document(load_settings(config))
    by_check = {m["check"]: m for m in document["monitors"]}
    started: dict[str, Lane] = {}
    with function_environment(config, checks):
        try:
            for check in checks:
                started[check] = _lane(by_check[check], period_seconds)
            for lane in started.values():
                lane.scheduler.start()
            yield started
        finally:
            for lane in started.values():
                lane.scheduler.stop()
                lane.vigilmon.stop()


def _lane(monitor: dict[str, Any], period_seconds: float) -> Lane:
    """A check's stand-in (watching) and scheduler (not started yet), its heartbeat URL in the environment."""
    check = monitor["check"]
    clock = ScaledClock(scale=monitor["interval_seconds"] / period_seconds)
    vigilmon = Vigilmon(clock=clock).start()
    created = vigilmon.create_monitors({"monitors": [monitor]})[check]
    os.environ[heartbeat_variable(check)] = vigilmon.heartbeat_url(created.key)
    every = min(0.05, period_seconds / 50)
    vigilmon.watch(every_seconds=every)
    scheduler = Scheduler({check: float(monitor["interval_seconds"])}, clock=clock)
    return Lane(check, monitor, clock, vigilmon, scheduler, every)


def wait_until(done: Callable[[], bool], timeout: float, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True


def measure(
    state_dir: Path,
    config: Path,
    fault: str,
    target: str | None,
    checks: Sequence[str] | None = None,
    period_seconds: float = DEFAULT_PERIOD_SECONDS,
    say: Callable[[str], None] = lambda _text: None,
) -> list[Measurement]:
    """Break `fault` (on `target`), wait for each check's alert, heal, wait for each resolve."""
    caught_by = list(checks if checks is not None else faults.FAULTS[fault].checks_for(target))
    with lanes(config, caught_by, period_seconds) as running:
        ready = wait_until(lambda: all(lane.healthy_pings() >= 1 for lane in running.values()), 12 * period_seconds)
        unhealthy = {
            check for check, lane in running.items() if lane.healthy_pings() == 0 or lane.vigilmon.events_for(check)
        }
        if not ready:
            say(f"          not healthy before the fault: {', '.join(sorted(unhealthy))}")
        real_break = time.monotonic()
        broke_at = {check: lane.clock() for check, lane in running.items()}
        try:  # healed whatever happens, a failed break included (it may have half taken effect)
            faults.break_fault(fault, target=target, state_dir=state_dir)
            break_real = time.monotonic() - real_break
            say(f"          broken; waiting for Vigilmon's alert ({', '.join(caught_by)})")

            # Alert by the model's worst case (plus the break's length), with room for a slow run: 3 schedules.
            def alerted() -> bool:
                return all(lane.first_event("alert", broke_at[c]) is not None for c, lane in running.items())

            longest = max(
                (lane.monitor["interval_seconds"] * 4 + lane.monitor["grace_seconds"]) / lane.clock.scale
                for lane in running.values()
            )
            if wait_until(alerted, longest + 2 * break_real + 10):
                say("          alerted; healing")
            else:
                say("          no alert from every check in time; healing")
        finally:
            real_heal = time.monotonic()
            healed_at = {check: lane.clock() for check, lane in running.items()}
            faults.heal(fault, state_dir=state_dir)
            heal_real = time.monotonic() - real_heal
        wait_until(
            lambda: all(
                lane.first_event("resolve", healed_at[c]) is not None or lane.first_event("alert", broke_at[c]) is None
                for c, lane in running.items()
            ),
            3 * period_seconds + heal_real + 30,
        )
        results = []
        for check, lane in running.items():
            failing = [
                run for run in lane.scheduler.runs_of(check) if not run.healthy and run.started_at >= broke_at[check]
            ]
            alert = lane.first_event("alert", broke_at[check])
            resolve = lane.first_event("resolve", healed_at[check])
            notes = []
            if check in unhealthy:
                notes.append("unhealthy before the fault")
            if not failing:
                notes.append("no failing run (not caught with the shipped params)")
            results.append(
                Measurement(
                    fault=fault,
                    target=target,
                    check=check,
                    scale=lane.clock.scale,
                    schedule_seconds=lane.monitor["interval_seconds"],
                    grace_seconds=lane.monitor["grace_seconds"],
                    run_seconds=lane.max_run_seconds(),
                    break_seconds=break_real * lane.clock.scale,
                    first_failing_seconds=failing[0].started_at - broke_at[check] if failing else None,
                    alert_seconds=alert - broke_at[check] if alert is not None else None,
                    resolve_seconds=resolve - healed_at[check] if resolve is not None else None,
                    note="; ".join(notes),
                    evaluation_seconds=lane.evaluate_every * lane.clock.scale,
                )
            )
        return results


def cases(only: Sequence[str] = ()) -> list[tuple[str, str | None]]:
    """Every fault of the catalogue on every target that fails a check (its default target otherwise)."""
    found: list[tuple[str, str | None]] = []
    for fault in faults.FAULTS.values():
        if only and fault.name not in only:
            continue
        targets = [t for t, checks in fault.checks_by_target.items() if checks] if fault.checks_by_target else [None]
        found.extend((fault.name, target) for target in targets)
    return found


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{math.ceil(value)}"


def table(measurements: Sequence[Measurement]) -> str:
    header = (
        "| fault | target | check | schedule s | grace s | run s | break s | to first failing run s | to alert s "
        "| worst case s | within model | heal to resolve s | note |"
    )
    rows = [header, "|" + "---|" * 13]
    for m in measurements:
        rows.append(
            f"| {m.fault} | {m.target or ''} | {m.check} | {m.schedule_seconds:g} | {m.grace_seconds:g} "
            f"| {_seconds(m.run_seconds)} | {_seconds(m.break_seconds)} | {_seconds(m.first_failing_seconds)} "
            f"| {_seconds(m.alert_seconds)} | {_seconds(m.worst_case_seconds)} | {'yes' if m.within_model else 'NO'} "
            f"| {_seconds(m.resolve_seconds)} | {m.note} |"
        )
    return "\n".join(rows)


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "alert-times", help="break every catalogue fault and measure the time to the stand-in Vigilmon's alert"
    )
    parser.add_argument("--state-dir", default=None, help="sandbox state directory (default ~/.outpost/sandbox)")
    parser.add_argument("--fault", action="append", default=[], metavar="NAME", help="only this fault (repeatable)")
    parser.add_argument(
        "--period", type=float, default=DEFAULT_PERIOD_SECONDS, help="real seconds per schedule (sets the scale)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of the table")
    parser.set_defaults(func=main)


def refusal(sandbox: Sandbox, wanted: list[str]) -> int | None:
    """The exit code, with its line on stderr, when faults cannot be measured: no sandbox up (1), or a fault
    `wanted` the catalogue does not have (64); None when they can."""
    if not sandbox.status().up:
        print(f"error: no sandbox up at {sandbox.state_dir} (`outpost sandbox up`)", file=sys.stderr)
        return 1
    unknown = [name for name in wanted if name not in faults.FAULTS]
    if unknown:
        print(f"error: unknown fault(s) {', '.join(unknown)} (`outpost sandbox break --help`)", file=sys.stderr)
        return 64
    return None


def main(args: argparse.Namespace) -> int:
    sandbox = Sandbox(args.state_dir)
    refused = refusal(sandbox, args.fault)
    if refused is not None:
        return refused
    config = environment_for(sandbox.state_dir)
    out = sys.stderr if args.json else sys.stdout  # bound now: while lanes run, stdout is the functions' log

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    measured: list[Measurement] = []
    failed: list[str] = []
    for fault, target in cases(args.fault):
        print(f"# {fault}{f' --target {target}' if target else ''}", file=sys.stderr, flush=True)
        try:
            rows = measure(sandbox.state_dir, config, fault, target, period_seconds=args.period, say=say)
        except faults.FaultError as error:  # one line, and on to the next fault (it was healed)
            print(f"error: {fault}: {error}", file=sys.stderr, flush=True)
            failed.append(fault)
            continue
        measured.extend(rows)
        for row in rows:
            print(json.dumps(row.as_dict()) if args.json else table([row]).splitlines()[-1], flush=True)
    if not args.json:
        print("\n" + table(measured))
    caught = [m for m in measured if m.first_failing_seconds is not None]
    return 0 if caught and not failed and all(m.within_model for m in caught) else 1
