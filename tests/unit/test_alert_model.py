"""The time-to-alert model, from the registry: every critical check alerts within 5 minutes by default.

The model (`outpost.deploy.alert_worst_case_seconds`): a fault right after a healthy run observed the cluster
is missed by that run, whose ping still arrives a run later; the monitor alerts once its last ping is older than
interval + grace. With each check's default schedule, the default deadline and tolerated misses, the worst case
of every critical check must be within issue 23's target; the sandbox's measured times are held to the same
model by tests/e2e/test_time_to_alert_e2e.py.
"""

from __future__ import annotations

import math

import pytest

from outpost import registry
from outpost.config import CheckSettings, ClusterSettings, Settings
from outpost.deploy import (
    ALERT_TARGET_SECONDS,
    PLATFORM_MARGIN_SECONDS,
    alert_worst_case_seconds,
    monitor_margin_seconds,
)

CRITICAL = [spec.name for spec in registry.checks() if spec.severity == "critical"]


def defaults() -> Settings:
    """An environment that says nothing about schedules, misses or the deadline: every default applies."""
    return Settings.model_validate(
        {
            "environment": "defaults",
            "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}},
            "checks": {name: {} for name in registry.names()},
        }
    )


def test_there_are_critical_checks() -> None:
    assert len(CRITICAL) >= 10


@pytest.mark.parametrize("name", CRITICAL)
def test_every_critical_check_alerts_within_the_target_by_default(name: str) -> None:
    settings = defaults()
    worst = alert_worst_case_seconds(settings, name)
    assert worst <= ALERT_TARGET_SECONDS, f"{name}: {worst} s from fault to alert by default"


def test_the_model_is_schedule_plus_run_plus_grace() -> None:
    settings = defaults()
    deadline = ClusterSettings.model_fields["deadline_seconds"].default
    for spec in registry.checks():
        interval = spec.schedule_minutes * 60
        grace = CheckSettings().grace_seconds(spec.schedule_minutes, monitor_margin_seconds(settings))
        expected = math.ceil(interval + deadline + PLATFORM_MARGIN_SECONDS + grace)
        assert alert_worst_case_seconds(settings, spec.name) == expected, spec.name


def test_configured_schedule_and_misses_move_the_worst_case() -> None:
    settings = defaults()
    slower = settings.model_copy(
        update={
            "checks": {**settings.checks, "apiserver-health": CheckSettings(schedule_minutes=5, tolerated_misses=3)}
        }
    )
    assert alert_worst_case_seconds(slower, "apiserver-health") > ALERT_TARGET_SECONDS
