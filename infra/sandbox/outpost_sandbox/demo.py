"""`outpost demo`: the main job on the embedded default, end to end, readable by a person.

It brings the sandbox up, runs every `local` check once as the probe identity against the local Vigilmon stand-in,
then breaks `etcd-down` while apiserver-health runs on its (sped-up) schedule: the failing runs, the alert and its
time beside the model's worst case; heals, and the next ping resolves the alert. The sandbox is left running to
explore (`outpost sandbox down` stops it).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from outpost.config import KubeconfigAuth, Settings, environment_file
from outpost.result import Result
from outpost.runner import run_check
from outpost.settings import DEFAULT_ENVIRONMENT, load_settings
from outpost_sandbox import alert_times, faults
from outpost_sandbox.cluster import Sandbox
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

DEMO_FAULT = "etcd-down"
"""The fault the demo injects: caught by apiserver-health, which every environment runs."""
DEMO_CHECK = "apiserver-health"
DEMO_PERIOD_SECONDS = 3.0
"""Real seconds per schedule while the fault is measured (a 1-minute schedule runs 20 times faster)."""


def register(commands: Any) -> None:
    parser = commands.add_parser("demo", help="sandbox up, every check once with heartbeats, one fault caught")
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
        f"\nstep 3/4  injecting a fault: outpost sandbox break {DEMO_FAULT} ({faults.FAULTS[DEMO_FAULT].help}),\n"
        f"          with {DEMO_CHECK} running on its schedule as deployed (its entry module, a scheduled event) and\n"
        "          its monitor in the Vigilmon stand-in as `outpost monitors` defines it; one schedule passes in\n"
        f"          {DEMO_PERIOD_SECONDS:g} real seconds, and every time below is in the deployed schedule's seconds"
    )
    config = alert_times.environment_for(sandbox.state_dir)
    [measured] = alert_times.measure(
        sandbox.state_dir, config, DEMO_FAULT, None, [DEMO_CHECK], period_seconds=DEMO_PERIOD_SECONDS, say=say
    )
    say(f"\nstep 4/4  the fault, the alert and back (healed with outpost sandbox heal {DEMO_FAULT})")
    say(_told(measured))
    caught = measured.within_model and measured.resolve_seconds is not None

    say("\nthe sandbox is still running; `outpost sandbox down` stops it")
    healthy_at_start = all(r.status.healthy for r in baseline)
    return 0 if caught and healthy_at_start else 1


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


def _told(measured: alert_times.Measurement) -> str:
    def seconds(value: float | None) -> str:
        return "never" if value is None else f"{value:.0f} s"

    lines = [
        f"          first failing run  {seconds(measured.first_failing_seconds)} after the break",
        f"          Vigilmon alert     {seconds(measured.alert_seconds)} after the break "
        f"(model worst case {measured.worst_case_seconds:.0f} s = schedule {measured.schedule_seconds:g} + run "
        f"{measured.run_seconds:.0f} + grace {measured.grace_seconds:g})",
        f"          resolved           {seconds(measured.resolve_seconds)} after the heal",
        "          caught: the alert came within the model, and resolved after the heal"
        if measured.within_model and measured.resolve_seconds is not None
        else "          NOT caught in time",
    ]
    return "\n".join(lines)


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
