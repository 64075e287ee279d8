"""`outpost demo`: the main job on the embedded default, end to end, readable by a person.

It brings the sandbox up and runs every `local` check once as the probe identity against a heartbeat receiver.
Then it stops the API server with every check scheduled at once, as deployed, each on a (sped-up) schedule, each
monitor in the Vigilmon stand-in as `outpost monitors` defines it, and hold-back on (the inhibitor in process):
the one page (apiserver-health's) and its time beside the model's worst case, every dependant held back, what the
page and the failing run tell the person on call, and the cloud alarms the same runs raise, as the generated
templates hold them back. It heals, and every monitor resolves. `outpost sandbox pages` measures the same for the
whole catalogue (docs/pages.md). The sandbox is left running to explore (`outpost sandbox down` stops it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from outpost.config import KubeconfigAuth, Settings, environment_file
from outpost.result import Result
from outpost.runner import run_check
from outpost.settings import DEFAULT_ENVIRONMENT, load_settings
from outpost.tooling import monitors
from outpost_sandbox import alert_times, faults, pages
from outpost_sandbox.cluster import Sandbox
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

DEMO_FAULT = "apiserver-down"
"""The fault the demo injects: its root cause is named by apiserver-health, which every check depends on."""
DEMO_CHECK = "apiserver-health"
DEMO_PERIOD_SECONDS = pages.DEFAULT_PERIOD_SECONDS
"""Real seconds per 1-minute schedule while the fault is measured (every time shown is in deployed seconds)."""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "demo", help="sandbox up, every check once with heartbeats, an API server outage paged once"
    )
    parser.add_argument("--nodes", type=int, default=100, help="kwok fake nodes (default 100)")
    parser.add_argument("--state-dir", default=None, help="sandbox state directory (default ~/.outpost/sandbox)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    say = _printer()
    say("step 1/4  starting the local simulated cluster")
    sandbox = Sandbox(args.state_dir)
    up = sandbox.up(nodes=args.nodes)
    say(up.usage())

    settings = load_settings(environment_file(DEFAULT_ENVIRONMENT))
    auth = KubeconfigAuth(mode="kubeconfig", path=str(up.probe_kubeconfig))
    settings = settings.model_copy(update={"cluster": settings.cluster.model_copy(update={"auth": auth})})
    settings = _identities_in(settings, up.state_dir)
    names = settings.enabled_checks()

    with HeartbeatReceiver() as receiver:
        for name in names:
            os.environ[alert_times.heartbeat_variable(name)] = receiver.url_for(name)

        say(
            f"\nstep 2/4  running {len(names)} check(s) once, as the read-only probe identity "
            "(a job that writes as its own)"
        )
        baseline = _run_all(settings, names)
        _show(baseline, receiver, say)

    say(
        f"\nstep 3/4  stopping the API server (outpost sandbox break {DEMO_FAULT}: "
        f"{faults.FAULTS[DEMO_FAULT].help}),\n"
        f"          with all {len(names)} checks scheduled at once as deployed (entry modules, scheduled events),\n"
        "          each monitor in the Vigilmon stand-in as `outpost monitors` defines it, and hold-back on: a\n"
        "          failing check asks the inhibitor to hold its dependants back; one minute passes in "
        f"{DEMO_PERIOD_SECONDS:g} real\n          seconds, and every time below is in deployed seconds"
    )
    directory = sandbox.state_dir / "demo"
    record = pages.measure(
        pages.catalogue_driver(sandbox.state_dir, DEMO_FAULT, None),
        pages.base_environment(sandbox.state_dir, directory),
        directory / "run",
        period_seconds=DEMO_PERIOD_SECONDS,
        say=say,
    )
    say(f"\nstep 4/4  what reached people (healed with outpost sandbox heal {DEMO_FAULT})")
    told = tell(record, directory / "run" / "runs.log", settings)
    for line in told.lines:
        say(line)

    say("\nthe sandbox is still running; `outpost sandbox down` stops it")
    healthy_at_start = all(r.status.healthy for r in baseline)
    return 0 if told.one_page and healthy_at_start else 1


@dataclass(frozen=True)
class Told:
    lines: list[str]
    one_page: bool
    """One page, the root cause's, within the model; nothing else alerted; every alert resolved."""


def tell(record: pages.FaultRecord, function_log: Path, settings: Settings) -> Told:
    """What `record` put in front of people: the pages, the dependants held back, what the page and the failing
    run say, the cloud alarms; and whether it was the one page it should be."""
    tally = pages.tally(record)
    by_check = {m.check: m for m in record.monitors}
    lines = []
    for page in tally.pages:
        worst = by_check[page.check].worst_case_seconds
        lines.append(f"          PAGE           {page.check} at {page.seconds:.0f} s (model worst case {worst:.0f} s)")
    if not tally.pages:
        lines.append("          PAGE           none")
    for note in tally.notifications:
        lines.append(f"          notification   {note.check} at {note.seconds:.0f} s")
    held = ", ".join(tally.held_back) or "none"
    lines.append(f"          held back      {len(tally.held_back)} dependant(s), their monitors in maintenance: {held}")
    if record.unhealthy_before:
        lines.append(f"          unhealthy before the fault: {', '.join(record.unhealthy_before)}")
    for page in tally.pages[:1]:
        lines.append(f"          the page says  {monitors.description(settings, page.check)}")
        run = last_failing_run(function_log, page.check)
        if run is not None:
            lines.append(f"          its run said   {run['summary']}")
            for step in run.get("next_steps", [])[:1]:
                lines.append(f"          next step      {step['cause']}; run: {step['command']}")
    for cloud, name in (("aws", "AWS (CloudWatch)"), ("gcp", "Google Cloud (Cloud Monitoring)")):
        tiers = tally.cloud.get(cloud, {})
        acted = [*tiers.get("page", ()), *tiers.get("notify", ())]
        lines.append(
            f"          {name}: {len(tiers.get('page', ()))} paging and {len(tiers.get('notify', ()))} notifying "
            f"alarm(s) acted ({', '.join(acted) or 'none'}), {len(tiers.get('held', ()))} held back"
        )
    unresolved = ", ".join(tally.unresolved)
    lines.append(f"          after the heal {'unresolved: ' + unresolved if unresolved else 'every alert resolved'}")
    critical_dependants = {m.check for m in record.monitors if m.pages} - {DEMO_CHECK}
    one_page = (
        [page.check for page in tally.pages] == [DEMO_CHECK]
        and not tally.notifications
        and critical_dependants <= set(tally.held_back)
        and bool(tally.first_page_within_model)
        and not tally.unresolved
    )
    lines.append(
        "          caught: one page for one root cause, within the model, its dependants held back, resolved"
        if one_page
        else "          NOT the one page it should be"
    )
    return Told(lines, one_page)


def last_failing_run(function_log: Path, check: str) -> dict[str, Any] | None:
    """The last run line of `check` in the functions' log that ended failed or error (what the person paged finds
    with the query every alarm carries), or None."""
    found = None
    if not function_log.exists():
        return None
    for text in function_log.read_text().splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict) and line.get("check") == check and line.get("status") in ("failed", "error"):
            found = line
    return found


def _identities_in(settings: Settings, state_dir: Path) -> Settings:
    """A check's own kubeconfig (`cluster_auth`, e.g. the reconciler's) taken from this sandbox's directory,
    wherever the environment file expects the default sandbox to be."""
    checks = {}
    for name, check in settings.checks.items():
        auth = check.cluster_auth
        if isinstance(auth, KubeconfigAuth) and auth.path:
            own = auth.model_copy(update={"path": str(state_dir / Path(auth.path).name)})
            check = check.model_copy(update={"cluster_auth": own})
        checks[name] = check
    return settings.model_copy(update={"checks": checks})


def _run_all(settings: Settings, names: Sequence[str]) -> list[Result]:
    return [run_check(settings, name, log=False) for name in names]


def _show(results: Sequence[Result], receiver: HeartbeatReceiver, say: Callable[[str], None]) -> None:
    width = max(len(r.check) for r in results)
    say(f"          {'CHECK'.ljust(width)}  {'STATUS':8}  {'PINGS':5}  SUMMARY")
    for result in results:
        pings = receiver.pings_for(result.check)
        say(f"          {result.check.ljust(width)}  {result.status.value:8}  {pings:<5}  {result.summary}")
        for line in result.errors[:5]:
            if line != result.summary:
                say(f"          {'':{width}}    - {line}")


def _printer() -> Callable[[str], None]:
    out = sys.stdout  # bound now: while the scheduled runs go, stdout is the functions' log (alert_times.lanes)
    return lambda text: print(text, file=out, flush=True)
