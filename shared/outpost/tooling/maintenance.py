"""`outpost maintenance start|end`: Vigilmon maintenance windows for one check's monitor or a whole environment.

Planned work (an upgrade, a node drain) would otherwise page: a maintenance window tells Vigilmon to
expect silence. Monitors are named by check; their ids come from the configuration. The API key is a
secret reference, resolved here and handed only to the Vigilmon client.
"""

from __future__ import annotations

import argparse
from typing import Any

from outpost.config import Settings
from outpost.errors import ConfigError
from outpost.heartbeat import VigilmonClient
from outpost.secrets import resolve
from outpost.settings import add_source_arguments, settings_from_args


def register(commands: Any) -> None:
    parser = commands.add_parser("maintenance", help="start or end a Vigilmon maintenance window")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    for action in ("start", "end"):
        sub = actions.add_parser(action, help=f"{action} a maintenance window")
        target = sub.add_mutually_exclusive_group(required=True)
        target.add_argument("--check", action="append", metavar="NAME", help="a check's monitor (repeatable)")
        target.add_argument("--all", action="store_true", help="every enabled check of the environment")
        if action == "start":
            sub.add_argument("--minutes", type=int, required=True, help="window length in minutes (>= 1)")
        add_source_arguments(sub)
        sub.set_defaults(func=lambda args: run(args, settings_from_args(args)))


def monitors(settings: Settings, checks: list[str] | None) -> dict[str, str]:
    """check name -> monitor id; every requested check must have a monitor_id configured."""
    names = checks or settings.enabled_checks()
    problems = []
    found: dict[str, str] = {}
    for name in names:
        configured = settings.checks.get(name)
        if configured is None or not configured.monitor_id:
            problems.append(f"checks.{name}.monitor_id: required for maintenance windows")
        else:
            found[name] = configured.monitor_id
    if problems:
        raise ConfigError(f"environment {settings.environment!r} cannot open maintenance windows", problems)
    if not found:
        raise ConfigError(f"environment {settings.environment!r} has no enabled checks")
    return found


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "start" and args.minutes < 1:
        raise ConfigError("invalid --minutes", ["--minutes: must be >= 1"])
    if settings.vigilmon.api_key is None:
        raise ConfigError("maintenance needs the Vigilmon API key", ["vigilmon.api_key: required for maintenance"])
    targets = monitors(settings, args.check)
    with VigilmonClient(
        settings.vigilmon.api_url,
        resolve(settings.vigilmon.api_key),
        timeout_seconds=settings.heartbeat.timeout_seconds,
        retries=settings.heartbeat.retries,
        backoff_seconds=settings.heartbeat.backoff_seconds,
    ) as client:
        for check, monitor_id in targets.items():
            if args.action == "start":
                client.start_maintenance(monitor_id, args.minutes)
                print(f"maintenance started: {check} (monitor {monitor_id}) for {args.minutes} min")
            else:
                client.end_maintenance(monitor_id)
                print(f"maintenance ended: {check} (monitor {monitor_id})")
    return 0
