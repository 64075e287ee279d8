"""`outpost sandbox pages`: the pages and notifications each catalogue fault causes, measured on the sandbox.

For each fault (and each target it takes), with every enabled check of the shipped `local` environment scheduled
at once on one scaled clock (`--period` real seconds per schedule of the most frequent check), every monitor in
one Vigilmon stand-in as `outpost monitors` defines it, and hold-back on through the inhibitor called in process
(`outpost.holdback.senders.LocalSender`, the local transport; the deployed ones are tested in
tests/functional/test_holdback_standin.py): a healthy warm-up (every monitor pinged), break, run until the alerts
settle, heal, wait for the resolutions. Recorded per fault (`FaultRecord`): the stand-in's alert events, every
run, the maintenance calls the inhibitor made, and the cloud alarms the same runs raise, evaluated by
`outpost.tooling.alerting.replay_fault` (the generated CloudWatch alarms and Cloud Monitoring alert policies, by
their documented semantics, held back as generated). Counted (`tally`): pages (alerts of critical monitors),
notifications (alerts of warning monitors; a critical monitor's alert goes to the notify channels too, not
counted twice), the monitors held back, the time from the break to the first page beside today's model (the
alert-times worst case of the fault's critical checks), and per cloud the alarms that page, notify or are held.

How long it runs after the break ("settle"): the longest worst case (schedule + run + grace) of the critical
monitors, of the fault's own checks and of every check that ran unhealthy since the break, capped at
`--horizon-cap` clock seconds, plus two schedules of the most frequent check. A monitor whose worst case lies
beyond the cap and that was silent at the heal is reported as "silent at heal" (it would have alerted had the
fault lasted), not as an alert.

The break and the heal run with the clock at real time (`ScaledClock.real_time`): what they take on the sandbox (a
component stopped until it is observably down, the managers restarted and leading again) takes as long in the
deployed units, not `scale` times as long, which would let the hold-back windows lapse during a heal that takes a
minute of real time.

The runs use the Lambda adapter's scheduled path (`run_scheduled`, a run line with its metrics) with the local
hold-back transport, not the entry module's handler, whose transport is the Lambda invocation of a deployed
inhibitor. Times are in the clock's seconds (the deployed schedule's real units). `render` writes docs/pages.md.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import httpx
import yaml

from outpost import registry
from outpost.config import Settings
from outpost.deploy import run_seconds
from outpost.holdback.senders import sender_for
from outpost.runtime.common import cold_start_settings, run_scheduled
from outpost.settings import load_settings
from outpost.tooling import alerting, monitors
from outpost_sandbox import alert_times, faults
from outpost_sandbox.cluster import Sandbox
from outpost_sandbox.scheduler import Handler, Run, ScaledClock, Scheduler
from outpost_sandbox.vigilmon import AlertEvent, Vigilmon

DEFAULT_PERIOD_SECONDS: Final = 4.0
"""Real seconds per schedule of the most frequent check: a 1-minute schedule every 4 s (scale 15), as the time to
alert e2e tests run; the soak runs every check at 2.5 s with no alert."""
HORIZON_CAP_SECONDS: Final = 1200.0
"""Clock seconds the settle waits at most: past a 5-minute monitor's worst case (995 s with the defaults), short of
an hourly one's (about 3 hours), which would make one fault take 18 real minutes at the default period."""
SETTLE_MARGIN_SCHEDULES: Final = 2
VIGILMON_KEY_VARIABLE: Final = "OUTPOST_PAGES_VIGILMON_KEY"
PATTERN_RUNS: Final = 12
"""Runs replayed per evaluated pattern (a transient failure, two failures in three)."""

Say = Callable[[str], None]
CLOUDS: Final = ("aws", "gcp")


def _quiet(_text: str) -> None:
    pass


# -- the record ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MonitorInfo:
    """One monitor as `outpost monitors` defines it: what it pages, and the model's worst case."""

    check: str
    monitor_id: str
    severity: str
    interval_seconds: float
    grace_seconds: float
    worst_case_seconds: float

    @property
    def pages(self) -> bool:
        return self.severity == "critical"


@dataclass(frozen=True)
class CloudAlarm:
    """A generated cloud alarm that went to ALARM over the fault's runs: its actions performed `minute` after the
    break, or `held` (in ALARM from `minute`, its actions suppressed by a failing parent's alarms)."""

    check: str
    rule: str
    cloud: str
    tier: str
    minute: int
    held: bool = False


@dataclass(frozen=True)
class Held:
    """One maintenance call the inhibitor made after the break: `monitor_id` held for `minutes`."""

    monitor_id: str
    minutes: int


@dataclass(frozen=True)
class FaultRecord:
    """What one fault's run recorded: the streams, and the times they are counted against (clock seconds)."""

    fault: str
    target: str | None
    named: tuple[str, ...]
    """The checks the catalogue says the fault fails."""
    hold_back: bool
    scale: float
    monitors: tuple[MonitorInfo, ...]
    broke_at: float
    break_seconds: float
    healed_at: float
    ended_at: float
    evaluation_seconds: float
    events: tuple[AlertEvent, ...]
    runs: tuple[Run, ...]
    held: tuple[Held, ...]
    alarms: tuple[CloudAlarm, ...]
    unhealthy_before: tuple[str, ...] = ()
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FaultRecord:
        fields = dict(data)
        fields["named"] = tuple(data["named"])
        fields["monitors"] = tuple(MonitorInfo(**m) for m in data["monitors"])
        fields["events"] = tuple(AlertEvent(**e) for e in data["events"])
        fields["runs"] = tuple(Run(**r) for r in data["runs"])
        fields["held"] = tuple(Held(**h) for h in data["held"])
        fields["alarms"] = tuple(CloudAlarm(**a) for a in data["alarms"])
        fields["unhealthy_before"] = tuple(data.get("unhealthy_before", ()))
        return cls(**fields)


# -- counting -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alerted:
    check: str
    seconds: float
    """After the break."""


@dataclass(frozen=True)
class Tally:
    """What reached people for one fault."""

    pages: tuple[Alerted, ...]
    notifications: tuple[Alerted, ...]
    held_back: tuple[str, ...]
    silent_at_heal: tuple[str, ...]
    """Monitors silent since the break, neither alerted nor held, whose worst case lies past the heal."""
    unresolved: tuple[str, ...]
    first_page_seconds: float | None
    model_seconds: float | None
    """Today's model for the first page: the soonest worst case among the fault's critical checks that failed a
    run (None: it names none, or none failed, so today's table promises no page)."""
    slack_seconds: float
    cloud: dict[str, dict[str, tuple[str, ...]]]
    """cloud -> tier (page, notify, or held: in ALARM, its actions suppressed) -> `check rule` of each alarm that
    fired."""
    uncaught: tuple[str, ...] = ()
    """The fault's checks with no failing run between the break and the heal: the shipped `local` parameters do not
    catch it (alert-times says the same: "not caught with the shipped params"); no page is promised for them."""

    @property
    def first_page_within_model(self) -> bool | None:
        if self.model_seconds is None:
            return None
        return (
            self.first_page_seconds is not None and self.first_page_seconds <= self.model_seconds + self.slack_seconds
        )


def tally(record: FaultRecord) -> Tally:
    """Count `record`: the alerts from the break to the end of the run, the monitors held, the cloud alarms."""
    by_check = {m.check: m for m in record.monitors}
    alerts = [e for e in record.events if e.kind == "alert" and e.at >= record.broke_at and e.check in by_check]
    alerts.sort(key=lambda e: e.at)
    pages = tuple(Alerted(str(e.check), e.at - record.broke_at) for e in alerts if by_check[str(e.check)].pages)
    notes = tuple(Alerted(str(e.check), e.at - record.broke_at) for e in alerts if not by_check[str(e.check)].pages)
    held_ids = {h.monitor_id for h in record.held if h.minutes > 0}
    held = tuple(m.check for m in record.monitors if m.monitor_id in held_ids)
    alerted = {a.check for a in (*pages, *notes)}
    silent = []
    for monitor in record.monitors:
        if monitor.check in alerted or monitor.check in held:
            continue
        pinged = [r for r in record.runs if r.check == monitor.check and r.healthy and r.ended_at >= record.broke_at]
        ran = [r for r in record.runs if r.check == monitor.check and r.started_at >= record.broke_at]
        if ran and not any(p.ended_at <= record.healed_at for p in pinged):
            silent.append(monitor.check)
    resolves = [e for e in record.events if e.kind == "resolve" and e.at >= record.broke_at]
    unresolved = tuple(
        sorted(
            check
            for check in alerted
            if not any(r.check == check and r.at >= max(a.at for a in alerts if a.check == check) for r in resolves)
        )
    )
    failing = {r.check for r in record.runs if record.broke_at <= r.started_at < record.healed_at and not r.healthy}
    uncaught = tuple(c for c in record.named if c in by_check and c not in failing)
    critical_named = [
        by_check[c].worst_case_seconds for c in record.named if c in by_check and by_check[c].pages and c in failing
    ]
    cloud: dict[str, dict[str, list[str]]] = {c: {"page": [], "notify": [], "held": []} for c in CLOUDS}
    for alarm in record.alarms:
        tier = "held" if alarm.held else alarm.tier
        cloud.setdefault(alarm.cloud, {"page": [], "notify": [], "held": []})[tier].append(
            f"{alarm.check} {alarm.rule}"
        )
    return Tally(
        pages=pages,
        notifications=notes,
        held_back=held,
        silent_at_heal=tuple(silent),
        unresolved=unresolved,
        first_page_seconds=pages[0].seconds if pages else None,
        model_seconds=min(critical_named) if critical_named else None,
        slack_seconds=record.break_seconds + record.evaluation_seconds,
        cloud={c: {t: tuple(v) for t, v in tiers.items()} for c, tiers in cloud.items()},
        uncaught=uncaught,
    )


def cloud_alarms(settings: Settings, runs: Sequence[Run], broke_at: float, healed_at: float) -> list[CloudAlarm]:
    """The generated alarms that go to ALARM over the runs from the break to the heal, on each cloud, replayed by
    `alerting.replay_fault` (each run on its schedule after the break, its line a run's length after its start;
    healthy after the heal) with the hold-back the templates generate: acting, or held."""
    in_fault = [r for r in sorted(runs, key=lambda r: r.started_at) if broke_at <= r.started_at < healed_at]
    outcomes = {check: [r.status for r in in_fault if r.check == check] for check in settings.enabled_checks()}
    found = []
    for cloud in CLOUDS:
        replayed = alerting.replay_fault(settings, {c: o for c, o in outcomes.items() if o}, cloud=cloud)
        for check, by_rule in replayed.items():
            tiers = {rule.key: rule.tier for rule in alerting.rules(settings, check)}
            for rule, held in by_rule.items():
                if held.actions:
                    found.append(CloudAlarm(check, rule, cloud, tiers[rule], held.actions[0]))
                elif held.suppressed:
                    minute = alerting.first_alarm_minute(held.states)
                    assert minute is not None
                    found.append(CloudAlarm(check, rule, cloud, tiers[rule], minute, held=True))
    return found


# -- evaluated patterns (a transient failure, two in three) --------------------------------------------------------


@dataclass(frozen=True)
class PatternOutcome:
    """One run pattern replayed for one check: whether (and when, seconds after the first run's schedule) Vigilmon's
    monitor and each cloud's alarms alert."""

    check: str
    pattern: str
    runs: tuple[str, ...]
    vigilmon_alert_seconds: float | None
    cloud_first_alarm_seconds: dict[str, float | None]
    worst_case_seconds: float


class Replayer:
    """The Vigilmon stand-in on a clock the replay sets: each replay gets a monitor of its own, created at 0."""

    def __init__(self) -> None:
        self.now = 0.0
        self.vigilmon = Vigilmon(clock=lambda: self.now)
        self._client = httpx.Client(timeout=5, trust_env=False)
        self._replays = 0

    def __enter__(self) -> Replayer:
        self.vigilmon.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._client.close()
        self.vigilmon.stop()

    def first_alert(self, monitor: Mapping[str, Any], outcomes: Sequence[str], run_seconds: float) -> float | None:
        """Replay `outcomes` (one run per schedule after a healthy run at 0) through a monitor defined as `monitor`,
        pinged over HTTP as a run pings (`run_seconds` after its start, ok and degraded only): the first alert's
        time after 0, or None."""
        self._replays += 1
        self.now = 0.0
        key = f"replay-{self._replays}"
        self.vigilmon.create_monitors({"monitors": [{**monitor, "monitor_id": key}]})
        url = self.vigilmon.heartbeat_url(key)
        interval = float(monitor["interval_seconds"])
        pings = [0.0] + [
            (i + 1) * interval + run_seconds for i, seen in enumerate(outcomes) if seen in ("ok", "degraded")
        ]
        end = (len(outcomes) + 1) * interval + run_seconds
        step = min(10.0, interval / 6)
        t = 0.0
        while t <= end:
            for due in [p for p in pings if p <= t]:
                self.now = due
                self._client.get(url)
                pings.remove(due)
            self.now = t
            self.vigilmon.evaluate()
            t += step
        alerts = [e.at for e in self.vigilmon.events if e.kind == "alert" and e.monitor == key]
        return alerts[0] if alerts else None


PATTERNS: Final[dict[str, tuple[str, ...]]] = {
    "one transient failed run": ("failed",) + ("ok",) * (PATTERN_RUNS - 1),
    "two failed runs in three": ("failed", "failed", "ok") * (PATTERN_RUNS // 3),
    "two failed runs in three (other phase)": ("failed", "ok", "failed") * (PATTERN_RUNS // 3),
}


def evaluate_patterns(settings: Settings, checks: Sequence[str] | None = None) -> list[PatternOutcome]:
    """Every pattern through each check's monitor (the stand-in) and generated alarms (`alerting.replay_fault`,
    every other check healthy: a held-back dependant's alarm acts after its wait)."""
    document = {m["check"]: m for m in monitors.document(settings)["monitors"]}
    found = []
    with Replayer() as replayer:
        for check in checks if checks is not None else settings.enabled_checks():
            for name, runs in PATTERNS.items():
                first: dict[str, float | None] = {}
                for cloud in CLOUDS:
                    replayed = alerting.replay_fault(settings, {check: runs}, cloud=cloud)[check]
                    seen = [held.actions[0] for held in replayed.values() if held.actions]
                    # A line written in minute m is seen at the end of it; the fault came at minute 0 (a schedule before
                    # the first failing run starts), so the alarm is m minutes after the fault.
                    first[cloud] = 60.0 * min(seen) if seen else None
                alert = replayer.first_alert(document[check], runs, run_seconds(settings))
                found.append(
                    PatternOutcome(check, name, runs, alert, first, float(document[check]["alert_within_seconds"]))
                )
    return found


# -- running a fault ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Driver:
    """Breaks and heals one fault: the catalogue's (`catalogue_driver`), or a test's."""

    fault: str
    target: str | None
    named: tuple[str, ...]
    break_: Callable[[], object]
    heal: Callable[[], object]


def catalogue_driver(state_dir: Path, fault: str, target: str | None) -> Driver:
    return Driver(
        fault,
        target,
        tuple(faults.FAULTS[fault].checks_for(target)),
        lambda: faults.break_fault(fault, target=target, state_dir=state_dir),
        lambda: faults.heal(fault, state_dir=state_dir),
    )


def local_handler(check: str) -> Handler:
    """A check's function as deployed, with the local hold-back transport: its settings loaded as a cold start,
    each scheduled event run by the Lambda adapter's scheduled path (raising when unhealthy), a failing parent
    asking the inhibitor in process."""
    settings = cold_start_settings(check)
    hold = sender_for(settings, "local")

    def handler(_event: Any, _context: Any) -> dict[str, Any]:
        return run_scheduled(settings, check, hold, metrics=True)

    return handler


def monitor_id(check: str) -> str:
    return f"pages-{check}"


def write_environment(base: Mapping[str, Any], vigilmon: Vigilmon, hold_back: bool, path: Path) -> Path:
    """`base` (a decoded environment file) with the stand-in as its Vigilmon (API URL, key by reference), a
    monitor id for every check, and hold-back on or off; written to `path`."""
    document = json.loads(json.dumps(base))
    document["vigilmon"] = {
        **document.get("vigilmon", {}),
        "api_url": vigilmon.api_url,
        "api_key": f"env:{VIGILMON_KEY_VARIABLE}",
    }
    document["hold_back"] = {**document.get("hold_back", {}), "enabled": hold_back}
    for check, entry in document["checks"].items():
        entry["monitor_id"] = monitor_id(check)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def wait_until(done: Callable[[], bool], timeout: float, every: float = 0.05) -> bool:
    return alert_times.wait_until(done, timeout, every)


def measure(
    driver: Driver,
    base: Mapping[str, Any],
    directory: Path,
    *,
    period_seconds: float = DEFAULT_PERIOD_SECONDS,
    hold_back: bool = True,
    horizon_cap_seconds: float = HORIZON_CAP_SECONDS,
    handler_for: Callable[[str], Handler] = local_handler,
    say: Say = _quiet,
) -> FaultRecord:
    """Run every enabled check of `base` at once, break `driver`'s fault, settle, heal, wait for the resolves;
    what was recorded. `directory` gets the environment file and the functions' log (`runs.log`)."""
    with Vigilmon() as vigilmon:
        config = write_environment(base, vigilmon, hold_back, directory / "environment.yaml")
        settings = load_settings(config)
        document = monitors.document(settings)
        shortest = min(float(m["interval_seconds"]) for m in document["monitors"])
        clock = ScaledClock(scale=shortest / period_seconds)
        vigilmon.clock = clock
        created = vigilmon.create_monitors(document)
        infos = {
            m["check"]: MonitorInfo(
                m["check"],
                created[m["check"]].key,
                m["severity"],
                float(m["interval_seconds"]),
                float(m["grace_seconds"]),
                float(m["alert_within_seconds"]),
            )
            for m in document["monitors"]
        }
        checks = list(infos)
        variables = {alert_times.heartbeat_variable(c): vigilmon.heartbeat_url(created[c].key) for c in checks}
        # The check entries of local.yaml name `env:OUTPOST_HEARTBEAT_<CHECK>`; a test's file may name others.
        for check, entry in settings.checks.items():
            reference = entry.heartbeat
            if check in created and isinstance(reference, str) and reference.startswith("env:"):
                variables[reference.removeprefix("env:")] = vigilmon.heartbeat_url(created[check].key)
        variables[VIGILMON_KEY_VARIABLE] = vigilmon.api_key
        every = min(0.05, period_seconds / 50)
        with alert_times.function_environment(config, checks, variables):
            scheduler = Scheduler({c: infos[c].interval_seconds for c in checks}, clock=clock, handler_for=handler_for)
            vigilmon.watch(every_seconds=every)
            scheduler.start()
            try:
                return _fault_run(
                    driver,
                    settings,
                    clock,
                    vigilmon,
                    scheduler,
                    infos,
                    period_seconds,
                    hold_back,
                    horizon_cap_seconds,
                    every,
                    say,
                )
            finally:
                scheduler.stop()


def _fault_run(
    driver: Driver,
    settings: Settings,
    clock: ScaledClock,
    vigilmon: Vigilmon,
    scheduler: Scheduler,
    infos: dict[str, MonitorInfo],
    period_seconds: float,
    hold_back: bool,
    horizon_cap_seconds: float,
    every: float,
    say: Say,
) -> FaultRecord:
    checks = list(infos)
    keys = {c: infos[c].monitor_id for c in checks}
    ready = wait_until(lambda: all(vigilmon.pings_for(keys[c]) >= 1 for c in checks), 12 * period_seconds + 30)
    unhealthy = tuple(c for c in checks if vigilmon.pings_for(keys[c]) == 0 or vigilmon.events_for(c))
    if not ready:
        say(f"          not healthy before the fault: {', '.join(unhealthy)}")
    calls_before = len(vigilmon.maintenance_calls)
    broke_at = clock()
    started = time.monotonic()
    healed_at = broke_at
    shortest = min(m.interval_seconds for m in infos.values())
    margin = SETTLE_MARGIN_SCHEDULES * shortest
    try:  # healed whatever happens, a failed break included (it may have half taken effect)
        with clock.real_time():
            driver.break_()
        break_seconds = time.monotonic() - started
        say(f"          broken; settling ({len(checks)} monitors)")

        def horizon() -> float:
            affected = {c for c in driver.named} | {
                r.check for r in scheduler.runs if r.started_at >= broke_at and not r.healthy
            }
            worst = [m.worst_case_seconds for m in infos.values() if m.pages or m.check in affected]
            return min(max(worst), horizon_cap_seconds) + margin + break_seconds

        while clock() - broke_at < horizon():
            time.sleep(min(0.5, period_seconds / 6))
    finally:
        healed_at = clock()
        heal_started = time.monotonic()
        with clock.real_time():
            driver.heal()
        heal_real = time.monotonic() - heal_started
    say("          healed; waiting for the resolves")

    def alerted_since_break() -> set[str]:
        return {str(e.check) for e in vigilmon.events if e.kind == "alert" and e.at >= broke_at}

    def resolved() -> bool:
        for check in alerted_since_break():
            last_alert = max(e.at for e in vigilmon.events_for(check, "alert"))
            if not any(e.at >= last_alert for e in vigilmon.events_for(check, "resolve")):
                return False
        return True

    longest = max((infos[c].interval_seconds for c in alerted_since_break()), default=shortest)
    wait_until(resolved, (longest + margin) / clock.scale + heal_real + 30)
    ended_at = clock()
    scheduler.stop()
    runs = tuple(sorted(scheduler.runs, key=lambda r: r.started_at))
    held = tuple(
        Held(str(call["monitor_id"]), int(call["duration_minutes"]))  # type: ignore[call-overload]
        for call in vigilmon.maintenance_calls[calls_before:]
    )
    events = tuple(vigilmon.events)
    alarms = tuple(cloud_alarms(settings, runs, broke_at, healed_at))
    return FaultRecord(
        fault=driver.fault,
        target=driver.target,
        named=driver.named,
        hold_back=hold_back,
        scale=clock.scale,
        monitors=tuple(infos.values()),
        broke_at=broke_at,
        break_seconds=break_seconds,
        healed_at=healed_at,
        ended_at=ended_at,
        evaluation_seconds=every * clock.scale,
        events=events,
        runs=runs,
        held=held,
        alarms=alarms,
        unhealthy_before=unhealthy,
        note="" if ready else "not every monitor pinged before the fault",
    )


# -- the page -----------------------------------------------------------------------------------------------------


def _s(value: float | None) -> str:
    return "-" if value is None else f"{math.ceil(value)}"


def _names(items: Sequence[str]) -> str:
    return ", ".join(f"`{item}`" for item in items) or "none"


def _alerted(items: Sequence[Alerted]) -> str:
    if not items:
        return "0"
    return f"{len(items)}: " + ", ".join(f"`{a.check}` ({_s(a.seconds)} s)" for a in items)


def _yes(held: bool | None) -> str:
    return "-" if held is None else ("yes" if held else "**NO**")


@dataclass(frozen=True)
class Target:
    name: str
    how: str
    holds: bool | None
    evidence: str


def targets(records: Sequence[FaultRecord], patterns: Sequence[PatternOutcome]) -> list[Target]:
    """The issue's four targets, each with whether it holds in `records` (measured) or `patterns` (evaluated)."""
    found = []
    rooted = [
        (r, root, [a.check for a in tally(r).pages]) for r in records if (root := root_cause_check(r.named)) is not None
    ]
    over = [
        f"{_case(r)}: {len(paged)} page(s), {_names(paged)}" for r, root, paged in rooted if paged not in ([], [root])
    ]
    down = [f"{len(paged)} page(s): {_names(paged)}" for r, _, paged in rooted if r.fault == "apiserver-down"]
    found.append(
        Target(
            "one page per incident wherever one check names its root cause (API server down: one page, not one per "
            "check)",
            "measured, every fault whose checks all depend on one of them",
            (not over) if rooted else None,
            f"{len(rooted) - len(over)} of {len(rooted)} at most one page, the root's"
            + (f"; apiserver-down {'; '.join(down)}" if down else "; apiserver-down was not run")
            + (f"; more: {'; '.join(over)}" if over else ""),
        )
    )

    transient = [p for p in patterns if p.pattern == "one transient failed run"]
    raised = [
        f"`{p.check}` ({', '.join(c for c in ('vigilmon', 'aws', 'gcp') if _channel(p, c) is not None)})"
        for p in transient
        if any(_channel(p, c) is not None for c in ("vigilmon", "aws", "gcp"))
    ]
    found.append(
        Target(
            "no alert for one transient failed run",
            "evaluated: replayed through each check's monitor (the stand-in) and its generated alarms",
            (not raised) if transient else None,
            f"{len(transient)} check(s); alerted: {', '.join(raised) or 'none'}",
        )
    )

    flapping = [p for p in patterns if p.pattern.startswith("two failed runs in three")]
    late = [
        f"`{p.check}` {p.pattern} on {cloud}" for p in flapping for cloud in ("aws", "gcp") if not _within(p, cloud)
    ]
    found.append(
        Target(
            "a check failing two runs in three alerts within its monitor's worst case",
            "evaluated: as above; on each cloud the first of the monitor and that cloud's alarms",
            (not late) if flapping else None,
            f"{len(flapping)} replay(s); late or never: {', '.join(late) or 'none'}",
        )
    )

    tallied = [(r, tally(r)) for r in records]
    judged = [(r, t) for r, t in tallied if t.model_seconds is not None]
    slow = [_case(r) for r, t in judged if not t.first_page_within_model]
    uncaught = [
        _case(r)
        for r, t in tallied
        if t.model_seconds is None and t.uncaught and any(m.pages for m in r.monitors if m.check in r.named)
    ]
    found.append(
        Target(
            "time to the first page no worse than today's model (the fault's critical checks' worst case)",
            "measured, every fault that fails a critical check",
            (not slow) if judged else None,
            f"{len(judged) - len(slow)} of {len(judged)} within; late or no page: {', '.join(slow) or 'none'}"
            + (
                f"; no failing run with the shipped parameters (no page promised): {', '.join(uncaught)}"
                if uncaught
                else ""
            ),
        )
    )
    return found


def root_cause_check(named: Sequence[str]) -> str | None:
    """The one of a fault's `named` checks that all the others depend on (`registry.dependants`, transitively), or
    None: the fault's root cause is named by one check, and the others are held back behind it."""
    for candidate in named:
        below = set(registry.dependants(candidate))
        if all(other == candidate or other in below for other in named):
            return candidate
    return None


def _case(r: FaultRecord) -> str:
    return f"{r.fault}{f' {r.target}' if r.target else ''}"


def _channel(p: PatternOutcome, channel: str) -> float | None:
    return p.vigilmon_alert_seconds if channel == "vigilmon" else p.cloud_first_alarm_seconds.get(channel)


def _within(p: PatternOutcome, cloud: str) -> bool:
    seen = [t for t in (p.vigilmon_alert_seconds, p.cloud_first_alarm_seconds.get(cloud)) if t is not None]
    return bool(seen) and min(seen) <= p.worst_case_seconds


def render(
    records: Sequence[FaultRecord],
    patterns: Sequence[PatternOutcome],
    *,
    command: str,
    generated_at: str,
    failed: Sequence[str] = (),
) -> str:
    """docs/pages.md: how it was made, the targets, a summary row per fault, then a table per fault."""
    scale = records[0].scale if records else None
    hold = {r.hold_back for r in records}
    lines = [
        "# Pages and notifications per fault",
        "",
        f"Generated by `{command}` on {generated_at} (`outpost_sandbox/pages.py`); do not edit, run it again.",
        "",
        "Measured on the sandbox: every enabled check of the shipped `local` environment scheduled at once on one "
        f"clock ({'scale ' + format(scale, 'g') if scale else 'no fault run'}: every time below is in the deployed "
        "schedule's seconds), every monitor in the Vigilmon stand-in as `outpost monitors` defines it, hold-back "
        f"{'on' if hold == {True} else 'off' if hold == {False} else 'mixed'} (the inhibitor in process). Per fault: "
        "a healthy warm-up, the break, the alerts settling (the longest worst case of the critical monitors and "
        "of every affected check, capped), the heal, the resolutions; the break and the heal at real time (what "
        "they take on the sandbox takes as long in deployed time). A page is an alert of a critical monitor, a "
        "notification one of a warning monitor (a critical alert goes to the notify channels too, not counted "
        "twice). The cloud columns are the generated CloudWatch alarms (AWS) and Cloud Monitoring alert policies "
        "(GCP) evaluated over the same runs, held back as the templates generate them (`outpost.tooling.alerting."
        "replay_fault`: AWS composite alarms with an actions suppressor, Cloud Monitoring policies that also need "
        "their parents quiet); an alarm counts where its actions were performed, and a held alarm reached ALARM "
        "and told nobody. Times count from the start of the break (the fault takes effect inside it).",
        "",
        "## Targets (issue 33)",
        "",
        "| target | how | holds | evidence |",
        "|---|---|---|---|",
    ]
    for target in targets(records, patterns):
        lines.append(f"| {target.name} | {target.how} | {_yes(target.holds)} | {target.evidence} |")
    if failed:
        lines += ["", f"Not measured (the fault could not be broken or healed): {', '.join(failed)}."]
    lines += [
        "",
        "## Summary",
        "",
        "| fault | target | Vigilmon pages | notifications | held back | first page s | model s | within "
        "| AWS pages / notifies | GCP pages / notifies |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for record in records:
        t = tally(record)
        aws, gcp = t.cloud.get("aws", {}), t.cloud.get("gcp", {})
        lines.append(
            f"| {record.fault} | {record.target or ''} | {len(t.pages)} | {len(t.notifications)} "
            f"| {len(t.held_back)} | {_s(t.first_page_seconds)} | {_s(t.model_seconds)} "
            f"| {_yes(t.first_page_within_model)} | {len(aws.get('page', ()))} / {len(aws.get('notify', ()))} "
            f"| {len(gcp.get('page', ()))} / {len(gcp.get('notify', ()))} |"
        )
    lines += ["", "## Per fault"]
    for record in records:
        t = tally(record)
        title = f"`{record.fault}`" + (f" on `{record.target}`" if record.target else "")
        lines += [
            "",
            f"### {title}",
            "",
            f"Fails, by the catalogue: {_names(record.named)}. Break took {_s(record.break_seconds)} s; healed "
            f"{_s(record.healed_at - record.broke_at)} s after the break.",
            "",
            "| | Vigilmon | AWS | GCP |",
            "|---|---|---|---|",
            f"| pages | {_alerted(t.pages)} | {_cloud(t, 'aws', 'page')} | {_cloud(t, 'gcp', 'page')} |",
            f"| notifications | {_alerted(t.notifications)} | {_cloud(t, 'aws', 'notify')} "
            f"| {_cloud(t, 'gcp', 'notify')} |",
            f"| held back | {_names(t.held_back)} | {_cloud(t, 'aws', 'held')} | {_cloud(t, 'gcp', 'held')} |",
            f"| silent at heal (worst case not reached) | {_names(t.silent_at_heal)} | - | - |",
            "",
            f"First page {_s(t.first_page_seconds)} s after the break; today's model "
            f"{_s(t.model_seconds)} s (+ {_s(t.slack_seconds)} s break and evaluation): "
            f"{_yes(t.first_page_within_model)}."
            + (f" Unresolved at the end: {_names(t.unresolved)}." if t.unresolved else "")
            + (
                f" No failing run of {_names(t.uncaught)} with the shipped `local` parameters (an opt-in parameter "
                "catches it; alert-times says the same)."
                if t.uncaught
                else ""
            )
            + (f" Unhealthy before the fault: {_names(record.unhealthy_before)}." if record.unhealthy_before else "")
            + (f" {record.note}." if record.note else ""),
        ]
    lines += [
        "",
        "## Evaluated run patterns",
        "",
        "Each check's runs replayed, one a schedule after a healthy run: through its monitor in the stand-in (pings "
        "over HTTP a run's length after each ok run) and its generated alarms (`alerting.replay_fault`, every other "
        "check healthy). Seconds after the fault; `-`: no alert.",
        "",
        "| check | pattern | Vigilmon s | AWS s | GCP s | monitor worst case s |",
        "|---|---|---|---|---|---|",
    ]
    for p in patterns:
        lines.append(
            f"| {p.check} | {p.pattern} | {_s(p.vigilmon_alert_seconds)} "
            f"| {_s(p.cloud_first_alarm_seconds.get('aws'))} | {_s(p.cloud_first_alarm_seconds.get('gcp'))} "
            f"| {_s(p.worst_case_seconds)} |"
        )
    return "\n".join(lines) + "\n"


def _cloud(t: Tally, cloud: str, tier: str) -> str:
    fired = t.cloud.get(cloud, {}).get(tier, ())
    return f"{len(fired)}" + (": " + ", ".join(f"`{item}`" for item in fired) if fired else "")


# -- the command --------------------------------------------------------------------------------------------------


def base_environment(state_dir: Path, directory: Path | None = None) -> dict[str, Any]:
    """The shipped `local` environment pointed at the sandbox, apiserver-latency measuring over 2 s instead of 10
    (a scaled schedule is a few real seconds; as the e2e tests do); written to `directory` (default
    `<state_dir>/pages`) too."""
    path = alert_times.environment_for(
        state_dir, directory or state_dir / "pages", params={"apiserver-latency": {"interval_seconds": 2.0}}
    )
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def pattern_settings(base: Mapping[str, Any], directory: Path) -> Settings:
    """`base` as the pages run configures it (hold-back on, monitor ids), for the evaluated patterns."""
    with Vigilmon() as vigilmon:
        return load_settings(write_environment(base, vigilmon, True, directory / "patterns.yaml"))


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "pages", help="every check scheduled at once: the pages and notifications each catalogue fault causes"
    )
    parser.add_argument("--state-dir", default=None, help="sandbox state directory (default ~/.outpost/sandbox)")
    parser.add_argument("--fault", action="append", default=[], metavar="NAME", help="only this fault (repeatable)")
    parser.add_argument(
        "--period",
        type=float,
        default=DEFAULT_PERIOD_SECONDS,
        help="real seconds per schedule of the most frequent check (sets the scale; default 4)",
    )
    parser.add_argument("--no-hold-back", action="store_true", help="measure with hold-back off (today's paging)")
    parser.add_argument(
        "--horizon-cap", type=float, default=HORIZON_CAP_SECONDS, help="clock seconds to settle at most (default 1200)"
    )
    parser.add_argument("--output", default=None, help="write the page here (e.g. docs/pages.md)")
    parser.add_argument(
        "--records", default=None, help="JSON of every fault's record (default <state dir>/pages/records.json)"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on from the --records file of a run stopped part-way (the same command): skip the faults it holds",
    )
    parser.add_argument(
        "--again",
        action="append",
        default=[],
        metavar="NAME",
        help="with --resume: measure this fault again (every target), its saved record replaced (repeatable)",
    )
    parser.add_argument(
        "--from-records", default=None, metavar="PATH", help="render a --records file again; break nothing"
    )
    parser.set_defaults(func=main)


def command_line(args: argparse.Namespace) -> str:
    """The command as the page shows it (no local paths but the output's)."""
    words = ["outpost", "sandbox", "pages"]
    for fault in args.fault:
        words += ["--fault", fault]
    if args.period != DEFAULT_PERIOD_SECONDS:
        words += ["--period", f"{args.period:g}"]
    if args.no_hold_back:
        words.append("--no-hold-back")
    if args.horizon_cap != HORIZON_CAP_SECONDS:
        words += ["--horizon-cap", f"{args.horizon_cap:g}"]
    if args.output:
        words += ["--output", args.output]
    return shlex.join(words)


def main(args: argparse.Namespace) -> int:
    sandbox = Sandbox(args.state_dir)
    out = sys.stdout  # bound now: while the checks run, stdout is the functions' log
    pages_dir = sandbox.state_dir / "pages"
    records_path = Path(args.records) if args.records else pages_dir / "records.json"
    failed: list[str] = []
    if args.again and not args.resume:
        print("error: --again goes with --resume (it replaces records of a saved run)", file=sys.stderr)
        return 2
    unknown = sorted(set(args.again) - set(faults.FAULTS))
    if unknown:
        print(
            f"error: --again: unknown fault(s) {', '.join(unknown)} (`outpost sandbox break --help`)", file=sys.stderr
        )
        return 64
    if args.from_records:
        saved = json.loads(Path(args.from_records).read_text())
        records = [FaultRecord.from_json(r) for r in saved["records"]]
        failed, command = list(saved.get("failed", [])), str(saved.get("command", command_line(args)))
    else:
        command = command_line(args)
        records = []
        done: set[tuple[str, str | None]] = set()
        if args.resume and records_path.exists():
            # A run stopped part-way goes on where it stopped: its records kept, the faults it measured not again.
            saved = json.loads(records_path.read_text())
            if saved.get("command") != command:
                print(
                    f"error: --resume: {records_path} was made by `{saved.get('command')}`, not `{command}`",
                    file=sys.stderr,
                )
                return 2
            # A fault measured before a change that alters it (a check, the dependency graph) is measured again.
            records = [FaultRecord.from_json(r) for r in saved["records"] if r["fault"] not in args.again]
            done = {(r.fault, r.target) for r in records}  # a fault that could not be broken is tried again
        todo = [(i, f, t) for i, (f, t) in enumerate(alert_times.cases(args.fault)) if (f, t) not in done]
        if todo or not records:  # nothing left to break needs no sandbox
            refused = alert_times.refusal(sandbox, args.fault)
            if refused is not None:
                return refused
        base = base_environment(sandbox.state_dir)
        for index, fault, target in todo:
            print(f"# {fault}{f' --target {target}' if target else ''}", file=sys.stderr, flush=True)
            directory = pages_dir / f"{index:02d}-{fault}{f'-{target}' if target else ''}"
            try:
                record = measure(
                    catalogue_driver(sandbox.state_dir, fault, target),
                    base,
                    directory,
                    period_seconds=args.period,
                    hold_back=not args.no_hold_back,
                    horizon_cap_seconds=args.horizon_cap,
                    say=lambda text: print(text, file=sys.stderr, flush=True),
                )
            except faults.FaultError as error:  # one line, and on to the next fault (it was healed)
                print(f"error: {fault}: {error}", file=sys.stderr, flush=True)
                failed.append(f"{fault}{f' --target {target}' if target else ''}")
                continue
            records.append(record)
            t = tally(record)
            print(
                f"          {len(t.pages)} page(s), {len(t.notifications)} notification(s), "
                f"{len(t.held_back)} held back, first page {_s(t.first_page_seconds)} s",
                file=sys.stderr,
                flush=True,
            )
            records_path.parent.mkdir(parents=True, exist_ok=True)
            records_path.write_text(
                json.dumps({"command": command, "failed": failed, "records": [r.as_json() for r in records]})
            )
    settings = pattern_settings(base_environment(sandbox.state_dir), pages_dir)
    patterns = evaluate_patterns(settings)
    page = render(
        records, patterns, command=command, generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), failed=failed
    )
    if args.output:
        Path(args.output).write_text(page)
        print(f"wrote {args.output}", file=out)
    else:
        print(page, file=out)
    return 0 if not failed and all(t.holds for t in targets(records, patterns)) else 1
