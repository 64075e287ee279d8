"""`outpost maintenance start|end`: Vigilmon maintenance windows for one check's monitor or a whole environment.

Planned work (an upgrade, a node drain) would otherwise page: a maintenance window tells Vigilmon to
expect silence. Monitors are named by check; their ids come from the configuration. The API key is a
secret reference, resolved here and handed only to the Vigilmon client.

What this guarantees, so that a window never silences more, or longer, than asked:
- bounded: `--minutes` outside 1..`vigilmon.maintenance_max_minutes` (240 by default) is refused before any
  request;
- all or nothing (`outpost.windows`, shared with the inhibitor): when one monitor's start fails, every window
  this command opened is ended again, and so is the failed monitor's own when its request may have taken
  effect (no answer, or a 5xx); the exit is non-zero and the line names the monitor, the cause, what was
  rolled back and what could not be (still silenced, with the command that ends it);
- `end` tries every monitor, and names each it could not end.
Vigilmon documents no call that reads windows back (docs/contracts.md "Vigilmon interface"), so there is no
`list`: what is open is what these commands said they opened.
"""

from __future__ import annotations

import argparse
from typing import Any

from outpost.config import Settings
from outpost.errors import ConfigError
from outpost.settings import add_source_arguments, settings_from_args
from outpost.windows import Connect, Say, Target, connector, end_windows, start_windows

__all__ = ["Connect", "Say", "Target", "check_minutes", "end_windows", "monitors", "register", "run", "start_windows"]


def register(commands: Any) -> None:
    parser = commands.add_parser("maintenance", help="start or end a Vigilmon maintenance window")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    for action in ("start", "end"):
        sub = actions.add_parser(action, help=f"{action} a maintenance window")
        target = sub.add_mutually_exclusive_group(required=True)
        target.add_argument("--check", action="append", metavar="NAME", help="a check's monitor (repeatable)")
        target.add_argument("--all", action="store_true", help="every enabled check of the environment")
        if action == "start":
            sub.add_argument(
                "--minutes",
                type=int,
                required=True,
                help="window length in minutes (1 to vigilmon.maintenance_max_minutes, default 240)",
            )
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


def check_minutes(minutes: int, settings: Settings) -> None:
    """Refuse a window shorter than a minute or longer than the environment allows, in one line."""
    longest = settings.vigilmon.maintenance_max_minutes
    if minutes < 1:
        raise ConfigError(
            f"--minutes {minutes}: a window lasts at least 1 minute (`outpost maintenance end` ends one); "
            "nothing was sent"
        )
    if minutes > longest:
        raise ConfigError(
            f"--minutes {minutes}: longer than the {longest} min environment {settings.environment!r} allows "
            f"(vigilmon.maintenance_max_minutes); open at most {longest} min, or raise that setting; nothing was sent"
        )


def run(args: argparse.Namespace, settings: Settings, connect: Connect | None = None) -> int:
    if args.action == "start":
        check_minutes(args.minutes, settings)
    targets = monitors(settings, args.check)
    if connect is None:
        connect = connector(settings)
    with connect() as client:
        if args.action == "start":
            start_windows(targets, args.minutes, client, connect)
        else:
            end_windows(list(targets.items()), client)
    return 0
