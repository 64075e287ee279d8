"""`outpost demo`: the main job on the embedded default, end to end, readable by a person.

It brings the sandbox up, runs every `local` check once as the probe identity against a local Vigilmon
stand-in, breaks `etcd-down` to show the failure and the silence (no ping), heals and shows health again.
The sandbox is left running to explore (`outpost sandbox down` stops it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from outpost.config import KubeconfigAuth, Settings, environment_file
from outpost.result import Result, Status
from outpost.runner import run_check
from outpost.settings import DEFAULT_ENVIRONMENT, load_settings
from outpost_sandbox import faults
from outpost_sandbox.cluster import Sandbox
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver
from outpost_sandbox.poll import PollTimeout, poll_until

DEMO_FAULT = "etcd-down"
"""The fault the demo injects: caught by apiserver-health, which every environment runs."""


def register(commands: Any) -> None:
    parser = commands.add_parser("demo", help="sandbox up, every check once with heartbeats, one fault caught")
    parser.add_argument("--nodes", type=int, default=100, help="kwok fake nodes (default 100)")
    parser.add_argument("--state-dir", default=None, help="sandbox state directory (default ~/.outpost/sandbox)")
    parser.set_defaults(func=main)


def heartbeat_variable(check: str) -> str:
    """The `env:` reference the `local` environment uses for a check's heartbeat URL."""
    return "OUTPOST_HEARTBEAT_" + check.upper().replace("-", "_")


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
            os.environ[heartbeat_variable(name)] = receiver.url_for(name)

        say(
            f"\nstep 2/4  running {len(names)} check(s) once, as the read-only probe identity "
            "(a job that writes as its own)"
        )
        baseline = _run_all(settings, names)
        _show(baseline, receiver, say)

        say(f"\nstep 3/4  injecting a fault: outpost sandbox break {DEMO_FAULT} ({faults.FAULTS[DEMO_FAULT].help})")
        receiver.reset()
        faults.break_fault(DEMO_FAULT, state_dir=sandbox.state_dir)
        try:
            broken = _wait_for(
                lambda: _run_all(settings, ["apiserver-health"]),
                lambda results: results[0].status is Status.FAILED,
                timeout=60,
            )
            _show(broken, receiver, say)
            caught = broken[0].status is Status.FAILED and receiver.pings_for("apiserver-health") == 0
            say(
                "          caught: apiserver-health failed and sent no heartbeat; Vigilmon would alert"
                if caught
                else "          NOT caught: the fault went unnoticed"
            )
        finally:
            say(f"\nstep 4/4  healing: outpost sandbox heal {DEMO_FAULT}")
            faults.heal(DEMO_FAULT, state_dir=sandbox.state_dir)
        receiver.reset()
        healed = _wait_for(
            lambda: _run_all(settings, ["apiserver-health"]), lambda results: results[0].status is Status.OK, timeout=90
        )
        _show(healed, receiver, say)

    say("\nthe sandbox is still running; `outpost sandbox down` stops it")
    healthy_at_start = all(r.status.healthy for r in baseline)
    return 0 if caught and healthy_at_start and healed[0].status is Status.OK else 1


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


def _wait_for(run: Callable[[], list[Result]], done: Callable[[list[Result]], bool], timeout: float) -> list[Result]:
    results: list[list[Result]] = []

    def run_and_see_done() -> bool:
        results.append(run())
        return done(results[-1])

    with contextlib.suppress(PollTimeout):
        poll_until("the checks to settle", timeout, run_and_see_done, interval=2)
    return results[-1]


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
    return lambda text: print(text, flush=True)
