"""Maintenance windows over several monitors, all or nothing: what `outpost maintenance` and the inhibitor share.

What this guarantees, so that a window never silences more, or longer, than asked:
- all or nothing: when one monitor's start fails, every window this call opened is ended again (the same call as
  `end`, on a client with a fresh delivery budget, so the failure that used up the first one cannot starve the
  rollback), and so is the failed monitor's own when its request may have taken effect (no answer, or a 5xx);
  the `ReportError` names the monitor, the cause, what was rolled back and what could not be (still silenced,
  with the command that ends it);
- `end_windows` tries every monitor, and names each it could not end.
The API key is a secret reference, resolved here and handed only to the Vigilmon client. Bounds on `minutes`
are the caller's (`outpost.tooling.maintenance.check_minutes`, `outpost.holdback.decision`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from outpost.config import Settings
from outpost.errors import ConfigError, OutpostError, ReportError, ReportRefused
from outpost.heartbeat import VigilmonClient
from outpost.secrets import resolve

Connect = Callable[[], VigilmonClient]
"""Opens a Vigilmon client (with a delivery budget of its own)."""
Say = Callable[[str], None]
Target = tuple[str, str]
"""(check name, monitor id)."""


def connector(settings: Settings, why: str = "maintenance") -> Connect:
    """Vigilmon clients holding the environment's API key (resolved now: a missing key fails here, not later)."""
    if settings.vigilmon.api_key is None:
        # Not "api_key: required": the redaction guard reads `api_key: <word>` as a credential and hides the word.
        raise ConfigError(f"{why} needs the Vigilmon API key", [f"vigilmon.api_key: not set, and {why} needs it"])
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
    targets: dict[str, str],
    minutes: int | Mapping[str, int],
    client: VigilmonClient,
    connect: Connect,
    say: Say = print,
) -> None:
    """Open a window on every target (check -> monitor), for `minutes` (one length, or one per check), or none: a
    failure ends what was opened, then raises `ReportError`."""
    lengths = {check: minutes if isinstance(minutes, int) else minutes[check] for check in targets}
    opened: list[Target] = []
    for check, monitor_id in targets.items():
        try:
            client.start_maintenance(monitor_id, lengths[check])
        except Exception as error:  # noqa: BLE001 - whatever stopped it, the windows already open must end
            # A refusal was not applied; no answer (or a 5xx) may have been, so that window is ended too.
            applied_maybe = not isinstance(error, ReportRefused | ValueError)
            to_end = opened + ([(check, monitor_id)] if applied_maybe else [])
            with connect() as rollback:
                ended, not_ended = end_windows(to_end, rollback, say, verb="rolled back", raise_on_failure=False)
            longest = max(lengths.values())
            raise ReportError(_rollback_line(check, monitor_id, _cause(error), longest, ended, not_ended)) from None
        opened.append((check, monitor_id))
        say(f"maintenance started: {check} (monitor {monitor_id}) for {lengths[check]} min")


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
