"""`outpost monitors --env ENV [--format yaml|json]`: the Vigilmon monitors of an environment, as code.

One heartbeat monitor per enabled check, with nothing a person creating it must guess: the function's name, the
secret reference (never the URL), interval, grace (schedule x `tolerated_misses` + one run rounded up to minutes,
since a healthy ping can come that late), the model's worst case from fault to alert, alert channels by severity
and a description that says what to do (docs/monitors.md). Vigilmon's API is documented to Outpost only for
heartbeats and maintenance, so this is a document to apply, not API calls. It holds no secret.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

import yaml

from outpost import redaction, registry
from outpost.config import Settings
from outpost.deploy import (
    alert_worst_case_seconds,
    function_name,
    monitor_margin_seconds,
    schedule_minutes,
    severity,
)
from outpost.settings import add_source_arguments, settings_from_args

LAYER_GROUPS: Final = {
    "control plane": "Control plane",
    "node": "Node layer",
    "workload SLO": "Workload SLOs",
    "batch": "Batch scheduling",
    "job": "Jobs",
}
"""Status page groups by layer, in page order (the Koordinator tutorial's grouping; jobs such as
kwok-pod-reconciler, which change the cluster rather than watch it, last)."""


def register(commands: Any) -> None:
    parser = commands.add_parser("monitors", help="the Vigilmon monitors of an environment's enabled checks, as code")
    add_source_arguments(parser)
    parser.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default: yaml)")
    parser.set_defaults(func=main)


def group_of(layer: str) -> str:
    """The status page group of a catalogue layer (an unknown layer gets a group of its own name)."""
    return LAYER_GROUPS.get(layer, layer[:1].upper() + layer[1:])


def alert_channels(settings: Settings, tier: str) -> list[str]:
    """Critical pages and notifies; warning notifies."""
    channels = settings.vigilmon.channels
    chosen = [*channels.page, *channels.notify] if tier == "critical" else list(channels.notify)
    return list(dict.fromkeys(chosen))


def monitor(settings: Settings, name: str) -> dict[str, Any]:
    spec = registry.get(name)
    configured = settings.checks[name]
    minutes = schedule_minutes(settings, name)
    tier = severity(settings, name)
    margin = monitor_margin_seconds(settings)
    return {
        "name": function_name(settings.environment, name),
        "check": name,
        "type": "heartbeat",
        "heartbeat": configured.heartbeat,
        "monitor_id": configured.monitor_id,
        "interval_seconds": minutes * 60,
        "tolerated_misses": configured.tolerated_misses,
        "grace_seconds": configured.grace_seconds(minutes, margin),
        "alert_within_seconds": alert_worst_case_seconds(settings, name),
        "severity": tier,
        "alert_channels": alert_channels(settings, tier),
        "group": group_of(spec.layer),
        "system": spec.system,
        "description": description(settings, name),
    }


def description(settings: Settings, name: str) -> str:
    """What the person paged reads first: what fails the check, the ways it fails (its runbooks' titles), and where
    the object and the next command are (a missed heartbeat carries neither: the run's log and a rerun do)."""
    spec = registry.get(name)
    ways = "; ".join(entry.title[:1].lower() + entry.title[1:] for entry in spec.runbooks) or "see the runbook"
    return (
        f"{spec.system}: fails when {spec.fails_when}. Silence means one of: {ways}; or the probe could not observe "
        f"(API server, credential, deadline). The function's log, or `outpost run {name} --env "
        f"{settings.environment}`, names the object and the next command; docs/runbooks.md#{name}"
    )


def document(settings: Settings) -> dict[str, Any]:
    """The monitors, channels and status page of `settings`' enabled checks."""
    monitors = [monitor(settings, name) for name in settings.enabled_checks()]
    order = list(LAYER_GROUPS.values())
    groups = sorted({m["group"] for m in monitors}, key=lambda g: (order.index(g) if g in order else len(order), g))
    return {
        "environment": settings.environment,
        "grace": f"interval x tolerated_misses + {monitor_margin_seconds(settings)} s (a run: the check's deadline "
        "plus the platform margin, rounded up to whole minutes, at least 60 s)",
        "alert_within": "interval + run + grace: the longest from a fault to the alert",
        "channels": {"page": list(settings.vigilmon.channels.page), "notify": list(settings.vigilmon.channels.notify)},
        "status_page": {
            "name": settings.vigilmon.status_page or f"Outpost {settings.environment}",
            "groups": [
                {"name": group, "monitors": [m["name"] for m in monitors if m["group"] == group]} for group in groups
            ],
        },
        "monitors": monitors,
    }


def render(settings: Settings, output_format: str) -> str:
    data = document(settings)
    if output_format == "json":
        return json.dumps(data, indent=2)
    header = (
        f"# Vigilmon monitors of environment {settings.environment!r}, generated by `outpost monitors`.\n"
        "# Apply as docs/monitors.md says; store each heartbeat URL at its reference, never here.\n"
    )
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)


def main(args: argparse.Namespace) -> int:
    # References only, never values; redacted all the same, like every line the CLI prints.
    print(redaction.redact(render(settings_from_args(args), args.format)))
    return 0
