"""The cloud alarms hold back too (AWS): while a check's `failed` or `error` alarm is in ALARM, the alarms of the
checks that depend on it notify nobody (docs/contracts.md "Cloud alarms").

The generated CloudFormation (`outpost.tooling.packaging.aws.held_alarms`) is checked for its shape, and the
evaluator (`outpost.tooling.alerting.composite_actions`, `replay_fault`) replays faults through it as CloudWatch
documents composite alarms with an actions suppressor: tables of faults -> which alarms act, and when.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import pytest

from outpost import registry
from outpost.config import Settings, parse_settings
from outpost.deploy import MAX_POLICY_CONDITIONS, held_parents
from outpost.tooling import alerting
from outpost.tooling.alerting import Transition, composite_actions, replay_fault
from outpost.tooling.packaging.aws import alarm_logical_id, resources, suppressor_logical_id

CHECKS = (
    "apiserver-health",
    "koord-manager-health",
    "koord-webhook",
    "kruise-manager-health",
    "kruise-webhook",
    "admission-dry-run",
)


def settings(hold_back: bool = True, **checks: dict[str, Any]) -> Settings:
    return parse_settings(
        {
            "environment": "staging",
            "deploy": {"platform": "aws", "region": "eu-west-1"},
            "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}, "deadline_seconds": 25},
            "vigilmon": {"api_key": "env:TEST_VIGILMON_KEY"},
            "hold_back": {"enabled": hold_back},
            "checks": {name: {"monitor_id": name, "schedule_minutes": 1, **checks.get(name, {})} for name in CHECKS},
        }
    )


def changes(*pairs: tuple[int, str]) -> list[Transition]:
    return [Transition(minute, state) for minute, state in pairs]  # type: ignore[arg-type]


# -- the documented suppression, one composite alarm ------------------------------------------------------------


@pytest.mark.parametrize(
    ("alarm", "suppressor", "acts"),
    [
        pytest.param(changes((5, "ALARM")), [], [7], id="no suppressor alarm: acts after the wait period"),
        pytest.param(changes((5, "ALARM"), (6, "OK")), [], [], id="cleared within the wait: nothing"),
        pytest.param(changes((5, "ALARM")), changes((3, "ALARM")), [], id="suppressor already in ALARM"),
        pytest.param(changes((5, "ALARM")), changes((6, "ALARM")), [], id="suppressor enters ALARM within the wait"),
        pytest.param(changes((5, "ALARM")), changes((8, "ALARM")), [7], id="suppressor too late: acted at the wait"),
        pytest.param(
            changes((5, "ALARM")),
            changes((3, "ALARM"), (10, "OK")),
            [13],
            id="still in ALARM an extension period after the suppressor cleared: acts",
        ),
        pytest.param(
            changes((5, "ALARM"), (12, "OK")),
            changes((3, "ALARM"), (10, "OK")),
            [],
            id="cleared within the extension: nothing",
        ),
        pytest.param(
            changes((5, "ALARM")),
            changes((3, "ALARM"), (10, "OK"), (11, "ALARM")),
            [],
            id="suppressor back in ALARM within the extension",
        ),
        pytest.param(
            changes((5, "ALARM")),
            changes((3, "INSUFFICIENT_DATA")),
            [7],
            id="suppressor INSUFFICIENT_DATA never suppresses",
        ),
        pytest.param(
            changes((2, "ALARM"), (4, "OK"), (8, "ALARM")),
            [],
            [10],
            id="each ALARM episode acts once, each after its own wait",
        ),
    ],
)
def test_a_composite_alarm_acts_as_cloudwatch_documents_its_actions_suppressor(
    alarm: list[Transition], suppressor: list[Transition], acts: list[int]
) -> None:
    assert composite_actions(alarm, suppressor, 30, wait_minutes=2, extension_minutes=3) == acts


# -- faults replayed through every generated alarm ---------------------------------------------------------------


def outage(minutes: int, status: str, *names: str) -> dict[str, Sequence[str | None]]:
    """`names` (every check when none) run `status` for `minutes` minutes, then healthy."""
    return {name: [status] * minutes for name in (names or CHECKS)}


def acting(replayed: dict[str, dict[str, alerting.HeldReplay]]) -> dict[str, dict[str, list[int]]]:
    return {
        name: {key: held.actions for key, held in rules.items() if held.actions}
        for name, rules in replayed.items()
        if any(held.actions for held in rules.values())
    }


def suppressed(replayed: dict[str, dict[str, alerting.HeldReplay]]) -> set[str]:
    return {f"{name}/{key}" for name, rules in replayed.items() for key, held in rules.items() if held.suppressed}


@pytest.mark.parametrize(
    ("fault", "hold_back", "acts", "held"),
    [
        pytest.param(
            outage(15, "error"),
            True,
            {"apiserver-health": {"error": [4]}},
            {f"{name}/error" for name in CHECKS[1:]},
            id="API server down: one notification, from apiserver-health; every dependant held",
        ),
        pytest.param(
            outage(15, "error"),
            False,
            {name: {"error": [4]} for name in CHECKS},
            set(),
            id="the same without hold-back: every check notifies",
        ),
        pytest.param(
            outage(15, "failed", "koord-manager-health", "koord-webhook", "admission-dry-run"),
            True,
            # Itself a dependant of apiserver-health, its `failed` waits two minutes for that one's alarms
            # (alerting.suppression). `flapping` is never held (alerting.HELD_RULES): it notifies after two runs.
            {
                "koord-manager-health": {"failed": [6], "flapping": [3]},
                "koord-webhook": {"flapping": [3]},
                "admission-dry-run": {"flapping": [3]},
            },
            {f"{name}/failed" for name in ("koord-webhook", "admission-dry-run")},
            id="koord-manager down: one page, its own; its webhook's and the dry run's are held, flapping notifies",
        ),
        pytest.param(
            outage(15, "failed", "koord-webhook"),
            True,
            {"koord-webhook": {"failed": [6], "flapping": [3]}},
            set(),
            id="a dependant failing on its own pages after the wait period; flapping waits for nothing",
        ),
        pytest.param(
            {"apiserver-health": [None] * 15, **{name: ["error"] * 15 for name in CHECKS[1:]}},
            True,
            # Every check apiserver-health alone held notifies; their own dependants are held by them in turn.
            {"koord-manager-health": {"error": [6]}, "kruise-manager-health": {"error": [6]}},
            {"koord-webhook/error", "kruise-webhook/error", "admission-dry-run/error"},
            id="fail-safe: the parent's function is dead (no run line), its dependants notify",
        ),
        pytest.param(
            {"apiserver-health": ["error"] * 10, "koord-webhook": ["error"] * 30},
            True,
            # apiserver-health's alarm clears at 12 (its first ok line, seen a minute later); 3 minutes later.
            {"apiserver-health": {"error": [4]}, "koord-webhook": {"error": [15]}},
            set(),
            id="the parent recovers, the dependant does not: it notifies an extension period later",
        ),
    ],
)
@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_faults_replayed_through_the_generated_alarms_notify_once_per_root_cause(
    fault: dict[str, Sequence[str | None]],
    hold_back: bool,
    acts: dict[str, dict[str, list[int]]],
    held: set[str],
    cloud: Literal["aws", "gcp"],
) -> None:
    """The same on both clouds: the composite alarms' wait and extension periods on AWS are the policy conditions'
    durations on Google Cloud."""
    replayed = replay_fault(settings(hold_back), fault, extra_minutes=20, cloud=cloud)
    assert acting(replayed) == acts
    assert suppressed(replayed) == held


# -- Google Cloud: the policy's parents-quiet conditions ------------------------------------------------------------

F, E, P, N = "failed", "error", "ok", None


@pytest.mark.parametrize(
    ("own", "parent", "opens"),
    [
        pytest.param([F] * 12, [P] * 12, [5], id="parent healthy: opens once the own condition waited 2 min"),
        pytest.param([F] * 12, [N] * 12, [5], id="parent silent (its function dead): missing data, opens"),
        pytest.param([F] * 12, [E] * 12, [], id="parent failing within the wait: nothing"),
        pytest.param(
            [F] * 20, [E] * 6 + [P] * 14, [10], id="still failing an extension after the parent's failures: opens"
        ),
        pytest.param([F] * 8 + [P] * 12, [E] * 6 + [P] * 14, [], id="recovers with its parent: nothing"),
        pytest.param([F] * 12, [E, F] * 6, [], id="a parent alternating between failed and error holds back too"),
        pytest.param([F] * 12, [E, P] * 6, [5], id="a parent's single errors do not hold back"),
    ],
)
def test_a_held_policy_opens_as_cloud_monitoring_combines_its_conditions(
    own: list[str | None], parent: list[str | None], opens: list[int]
) -> None:
    """One dependant (koord-manager-health: a 1-minute schedule, `failed` after three runs in a row; wait 2 min,
    extension 3) under its one parent, apiserver-health (held back by three failed-or-error runs in a row). One
    line per minute, from minute 0; a line of minute m is seen from m + 1: the own condition is met at 3."""
    configured = settings()
    (rule,) = [r for r in alerting.rules(configured, "koord-manager-health") if r.key == "failed"]
    policy = alerting.monitoring_policy(configured, rule)
    assert (policy.own.duration_seconds, [q.duration_seconds for q in policy.quiet]) == (120, [180])
    assert [q.parents for q in policy.quiet] == [("apiserver-health",)]
    lines = {"koord-manager-health": own, "apiserver-health": parent}
    changes = alerting.policy_states(lines, "koord-manager-health", policy)
    assert [c.minute for c in changes if c.state == "ALARM"] == opens


def test_parents_with_different_schedules_get_a_condition_each() -> None:
    configured = settings(True, **{"koord-manager-health": {"schedule_minutes": 5}})
    (rule,) = [r for r in alerting.rules(configured, "admission-dry-run") if r.key == "failed"]
    policy = alerting.monitoring_policy(configured, rule)
    grouped = {frozenset(q.parents): (q.alignment_seconds, q.runs) for q in policy.quiet}
    assert grouped == {
        frozenset({"apiserver-health", "koord-webhook", "kruise-manager-health", "kruise-webhook"}): (180, 3),
        frozenset({"koord-manager-health"}): (900, 3),
    }


def test_a_catalogue_default_schedule_fits_every_held_policy() -> None:
    """With the catalogue's schedules and the default tolerance, every held policy fits Cloud Monitoring's six
    conditions (a configuration that would not is refused: tests/unit/test_deploy.py)."""
    configured = parse_settings(
        {
            "environment": "staging",
            "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}},
            "hold_back": {"enabled": True},
            "checks": {name: {} for name in registry.names()},
        }
    )
    for name in registry.names():
        for rule in alerting.rules(configured, name):
            assert 1 + len(alerting.monitoring_policy(configured, rule).quiet) <= MAX_POLICY_CONDITIONS, (name, rule)


# -- the generated template ----------------------------------------------------------------------------------------


def test_each_dependant_alarm_acts_only_through_a_composite_suppressed_by_its_parents() -> None:
    configured = settings()
    stack = resources(configured)["Resources"]
    composites = {key: value for key, value in stack.items() if value["Type"] == "AWS::CloudWatch::CompositeAlarm"}
    for name in configured.enabled_checks():
        parents = held_parents(configured, name)
        assert parents == [p for p in registry.names() if p in CHECKS and name in registry.dependants(p)]
        for rule in alerting.rules(configured, name):
            metric = stack[alarm_logical_id(name, rule.key)]["Properties"]
            alert = composites.get(f"{alarm_logical_id(name, rule.key).removesuffix('Alarm')}AlertAlarm")
            if not parents or rule.key not in alerting.HELD_RULES:
                assert (metric["AlarmActions"] != [], alert) == (True, None)
                continue
            assert metric["AlarmActions"] == metric["OKActions"] == []
            assert alert is not None
            properties = alert["Properties"]
            assert properties["AlarmRule"] == {"Fn::Sub": f'ALARM("${{{alarm_logical_id(name, rule.key)}}}")'}
            assert properties["ActionsSuppressor"] == {"Ref": suppressor_logical_id(name)}
            held = alerting.suppression(configured, rule)
            assert held is not None
            assert properties["ActionsSuppressorWaitPeriod"] == held.wait_seconds >= 60
            assert properties["ActionsSuppressorExtensionPeriod"] == held.extension_seconds >= 60
            assert properties["AlarmActions"] == properties["OKActions"] != []
        if parents:
            suppressor = composites[suppressor_logical_id(name)]["Properties"]
            assert not {"AlarmActions", "OKActions", "ActionsSuppressor"} & set(suppressor)
            named = suppressor["AlarmRule"]["Fn::Sub"].split(" OR ")
            assert named == [
                f'ALARM("${{{alarm_logical_id(parent, key)}}}")' for parent in parents for key in ("failed", "error")
            ]


def test_without_hold_back_no_composite_alarm_and_every_alarm_acts() -> None:
    stack = resources(settings(hold_back=False))["Resources"]
    assert not [value for value in stack.values() if value["Type"] == "AWS::CloudWatch::CompositeAlarm"]
    assert all(value["Properties"]["AlarmActions"] != [] for value in stack.values())
