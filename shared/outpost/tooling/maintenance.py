"""`outpost maintenance start|end`: Vigilmon maintenance windows for one check's monitor or a whole environment.

Planned work (an upgrade, a node drain) would otherwise page: a maintenance window tells Vigilmon to
expect silence. Monitors are named by check; their ids come from the configuration. The API key is a
secret reference, resolved here and handed only to the Vigilmon client.

What this guarantees, so that a window never silences more, or longer, than asked:
- bounded: `--minutes` outside 1..`vigilmon.maintenance_max_minutes` (240 by default) is refused before any
  request;
- all or nothing: when one monitor's start fails, every window this command opened is ended again (the same
  call as `end`, on a client with a fresh delivery budget, so the failure that used up the first one cannot
  starve the rollback), and so is the failed monitor's own when its request may have taken effect (no answer,
  or a 5xx); the exit is non-zero and the line names the monitor, the cause, what was rolled back and what
  could not be (still silenced, with the command that ends it);
- `end` tries every monitor, and names each it could not end.
Vigilmon documents no call that reads windows back (docs/contracts.md "Vigilmon interface"), so there is no
`list`: what is open is what these commands said they opened.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from outpost.config import Settings
from outpost.errors import ConfigError, OutpostError, ReportError, ReportRefused
from outpost.heartbeat import VigilmonClient
from outpost.secrets import resolve
from outpost.settings import add_source_arguments, settings_from_args

Connect = Callable[[], VigilmonClient]
"""Opens a Vigilmon client (with a delivery budget of its own)."""
Say = Callable[[str], None]
Target = tuple[str, str]
"""(check name, monitor id)."""


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
        connect = _connector(settings)
    with connect() as client:
        if args.action == "start":
            start_windows(targets, args.minutes, client, connect)
        else:
            end_windows(list(targets.items()), client)
    return 0


def _connector(settings: Settings) -> Connect:
    if settings.vigilmon.api_key is None:
        raise ConfigError("maintenance needs the Vigilmon API key", ["vigilmon.api_key: required for maintenance"])
    api_key = resolve(settings.vigilmon.api_key)

    def connect() -> VigilmonClient:
        return VigilmonClient(
            settings.vigilmon.api_url,
            api_key,
            timeout_seconds=settings.heartbeat.timeout_seconds,
            retries=settings.heartbeat.retries,
            backoff_seconds=settings.heartbeat.backoff_seconds,
        )

    return connect


def start_windows(
    targets: dict[str, str], minutes: int, client: VigilmonClient, connect: Connect, say: Say = print
) -> None:
    """Open a window on every target, or none: a failure ends what was opened, then raises `ReportError`."""
    opened: list[Target] = []
    for check, monitor_id in targets.items():
        try:
            client.start_maintenance(monitor_id, minutes)
        except Exception as error:  # noqa: BLE001 - whatever stopped it, the windows already open must end
            # A refusal was not applied; no answer (or a 5xx) may have been, so that window is ended too.
            applied_maybe = not isinstance(error, ReportRefused | ValueError)
            to_end = opened + ([(check, monitor_id)] if applied_maybe else [])
            with connect() as rollback:
                ended, not_ended = end_windows(to_end, rollback, say, verb="rolled back", raise_on_failure=False)
            raise ReportError(_rollback_line(check, monitor_id, _cause(error), minutes, ended, not_ended)) from None
        opened.append((check, monitor_id))
        say(f"maintenance started: {check} (monitor {monitor_id}) for {minutes} min")


def end_windows(
    targets: list[Target],
    client: VigilmonClient,
    say: Say = print,
    *,
    verb: str = "ended",
    raise_on_failure: bool = True,
) -> tuple[list[Target], list[tuple[str, str, str]]]:
    """End each target's window, going on past a failure: (ended, [(check, monitor, cause)] not ended)."""
    ended: list[Target] = []
    not_ended: list[tuple[str, str, str]] = []
    for check, monitor_id in targets:
        try:
            client.end_maintenance(monitor_id)
        except Exception as error:  # noqa: BLE001 - the others must still be ended, and this one named
            not_ended.append((check, monitor_id, _cause(error)))
            continue
        ended.append((check, monitor_id))
        say(f"maintenance {verb}: {check} (monitor {monitor_id})")
    if not_ended and raise_on_failure:
        failures = "; ".join(f"{check} (monitor {monitor}): {cause}" for check, monitor, cause in not_ended)
        raise ReportError(
            f"could not end {len(not_ended)} of {len(targets)} windows, still silenced until they run out: "
            f"{failures}; run `outpost maintenance end --check NAME` again for each"
        )
    return ended, not_ended


def _rollback_line(
    check: str,
    monitor_id: str,
    cause: str,
    minutes: int,
    ended: list[Target],
    not_ended: list[tuple[str, str, str]],
) -> str:
    parts = [f"maintenance start failed for {check} (monitor {monitor_id}): {cause}"]
    if ended:
        parts.append("rolled back (window ended): " + ", ".join(f"{c} (monitor {m})" for c, m in ended))
    elif not not_ended:
        parts.append("no window was opened")
    if not_ended:
        names = " ".join(f"--check {c}" for c, _, _ in not_ended)
        parts.append(
            f"NOT rolled back, may stay silenced for up to {minutes} min: "
            + ", ".join(f"{c} (monitor {m}): {why}" for c, m, why in not_ended)
            + f"; end them with `outpost maintenance end {names}`"
        )
    return "; ".join(parts)


def _cause(error: Exception) -> str:
    """What went wrong, without a secret: Outpost's own messages never hold one; anything else by its type."""
    if isinstance(error, OutpostError | ValueError):
        return str(error)
    return f"unexpected {type(error).__name__}"
