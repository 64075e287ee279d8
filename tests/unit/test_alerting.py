"""The cloud alarms follow the monitors' tolerance (outpost.tooling.alerting), as generated for AWS
(outpost.tooling.packaging.aws) and Google Cloud (the Terraform variables of infra/gcp), and replayed through the
evaluator of the providers' documented alarm semantics.

Targets (issue 33): one transient failed run raises nothing; a check failing two runs in three alerts within its
monitor's worst case; a steady failure alerts no later than the monitor (`outpost.deploy.alert_worst_case_seconds`,
the model of today's time to alert).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint

from outpost import registry
from outpost.config import Settings
from outpost.deploy import (
    ALARM_RULES,
    RUNBOOKS_PAGE,
    alarm_name,
    alert_worst_case_seconds,
    max_window_seconds,
    run_seconds,
)
from outpost.tooling import alerting
from outpost.tooling.alerting import (
    CloudWatchAlarm,
    MonitoringCondition,
    Transition,
    cloudwatch_states,
    first_alarm_minute,
    monitoring_states,
    run_lines,
)
from outpost.tooling.packaging.aws import (
    ALARM_DESCRIPTION_LIMIT,
    RUNBOOK_BASE_MAX_LENGTH,
    logical_id,
    resources,
)
from outpost.tooling.packaging.cloudfunctions import terraform_variables

REPO = Path(__file__).resolve().parents[2]


def settings(
    checks: dict[str, dict[str, Any]], platform: str = "aws", environment: str = "stage1", cluster: str = "cluster-eu"
) -> Settings:
    deploy = {"platform": "aws", "region": "eu-west-1"}
    if platform == "gcf":
        deploy = {"platform": "gcf", "region": "europe-west1", "project": "outpost-example"}
    return Settings.model_validate(
        {
            "environment": environment,
            "deploy": deploy,
            "cluster": {"name": cluster, "auth": {"mode": "token", "server": "https://k", "token": "env:T"}},
            "checks": checks,
        }
    )


def every_check(cluster: str = "cluster-eu", **overrides: Any) -> Settings:
    return settings({name: dict(overrides) for name in registry.names()}, cluster=cluster)


def held_back(configured: Settings) -> Settings:
    """`configured` with hold-back on: its dependants' alarms act through composite alarms."""
    return configured.model_copy(update={"hold_back": configured.hold_back.model_copy(update={"enabled": True})})


# --- the rules ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "misses", "failed", "flapping", "period"),
    [
        (1, 2, (3, 3), (2, 3), 60),  # the defaults of a critical check: 2 of 3 flaps, 3 in a row fails
        (5, 2, (3, 3), (2, 3), 300),
        (1, 1, (2, 2), (2, 3), 60),  # the flapping window never shrinks below 3 runs (2 can never be 1 transient)
        (1, 3, (4, 4), (2, 4), 60),
        (1, 5, (6, 6), (4, 6), 60),
        (60, 2, (3, 3), (2, 3), 3600),
        (30, 100, (48, 48), (32, 48), 1800),  # CloudWatch: Period x EvaluationPeriods at most a day under an hour
        (1440, 10, (7, 7), (4, 7), 86_400),  # ... and at most seven days from an hour
    ],
)
def test_rules_follow_the_schedule_and_the_tolerated_misses(
    schedule: int, misses: int, failed: tuple[int, int], flapping: tuple[int, int], period: int
) -> None:
    rules = {
        rule.key: rule
        for rule in alerting.rules(
            settings({"apiserver-health": {"schedule_minutes": schedule, "tolerated_misses": misses}}),
            "apiserver-health",
        )
    }
    assert list(rules) == list(ALARM_RULES)
    assert {rule.period_seconds for rule in rules.values()} == {period}
    assert (rules["failed"].datapoints, rules["failed"].periods) == failed
    assert (rules["flapping"].datapoints, rules["flapping"].periods) == flapping
    assert (rules["error"].datapoints, rules["error"].periods) == failed
    assert (rules["degraded"].datapoints, rules["degraded"].periods) == failed
    assert {key: rule.outcome for key, rule in rules.items()} == {
        "failed": "failed",
        "flapping": "failed",
        "error": "error",
        "degraded": "degraded",
    }
    for rule in rules.values():
        assert rule.window_seconds <= max_window_seconds(rule.period_seconds)
        assert rule.datapoints >= min(2, rule.periods)


@pytest.mark.parametrize(("severity", "tier"), [("critical", "page"), ("warning", "notify")])
def test_failed_pages_for_critical_checks_and_everything_else_notifies(severity: str, tier: str) -> None:
    configured = settings({"apiserver-health": {"severity": severity}})
    tiers = {rule.key: rule.tier for rule in alerting.rules(configured, "apiserver-health")}
    assert tiers == {"failed": tier, "flapping": "notify", "error": "notify", "degraded": "notify"}


# --- the evaluator: the documented semantics ---------------------------------------------------------------------

F, P, E, D = "failed", "ok", "error", "degraded"  # P: a passing run
N: str | None = None  # no run line in that minute


@pytest.mark.parametrize(
    ("minutes", "alarm", "expected"),
    [
        # 2 of 3 need not be consecutive; a window with one breach left clears it.
        ([F, P, F, P, P, P], CloudWatchAlarm("Failed", 60, 3, 2), [Transition(3, "ALARM"), Transition(4, "OK")]),
        # 3 of 3: a pass in between restarts the count.
        ([F, F, P, F, F, F], CloudWatchAlarm("Failed", 60, 3, 3), [Transition(6, "ALARM")]),
        # notBreaching: a missing period counts as a pass (no lookback).
        ([F, F, N, F], CloudWatchAlarm("Failed", 60, 3, 3), []),
        # breaching: a missing period counts as a breach.
        (
            [P, P, P, F, F, N],
            CloudWatchAlarm("Failed", 60, 3, 3, treat_missing_data="breaching"),
            [Transition(6, "ALARM")],
        ),
        # missing: no datapoint in the whole range is INSUFFICIENT_DATA.
        (
            [F, N, N, N],
            CloudWatchAlarm("Failed", 60, 1, 1, treat_missing_data="missing"),
            [Transition(1, "ALARM"), Transition(2, "INSUFFICIENT_DATA")],
        ),
        # ignore: no datapoint in the whole range keeps the state.
        ([F, N, N, N], CloudWatchAlarm("Failed", 60, 1, 1, treat_missing_data="ignore"), [Transition(1, "ALARM")]),
        # A period's datapoint is its statistic (Maximum): one failed run among passes breaches the 2-minute period.
        ([P, F, P, P, P], CloudWatchAlarm("Failed", 120, 1, 1), [Transition(2, "ALARM"), Transition(4, "OK")]),
        # Sliding window: the period ends at every evaluation, not at a multiple of the period.
        (
            [N, N, N, F, N, N, N, N, N, N],
            CloudWatchAlarm("Failed", 300, 1, 1),
            [Transition(4, "ALARM"), Transition(9, "OK")],
        ),
    ],
)
def test_cloudwatch_evaluation(minutes: list[str | None], alarm: CloudWatchAlarm, expected: list[Transition]) -> None:
    assert cloudwatch_states(minutes, alarm) == expected


def test_cloudwatch_uses_older_real_datapoints_before_filling_in() -> None:
    """Documented: with datapoints missing in the window but enough real ones in the evaluation range, the most
    recent real ones are evaluated and TreatMissingData is not used."""
    minutes = [F, F, F, N]
    alarm = CloudWatchAlarm("Failed", 60, 3, 3)
    assert cloudwatch_states(minutes, alarm) == [Transition(3, "ALARM"), Transition(4, "OK")]
    assert cloudwatch_states(minutes, alarm, lookback_periods=2) == [Transition(3, "ALARM")]


@pytest.mark.parametrize(
    ("minutes", "condition", "expected"),
    [
        ([F, P, F, P, P, P], MonitoringCondition("failed", 180, 1), [Transition(3, "ALARM"), Transition(4, "OK")]),
        ([F, F, P, F, F, F], MonitoringCondition("failed", 180, 2), [Transition(6, "ALARM")]),
        ([F, F, N, F], MonitoringCondition("failed", 180, 2), []),
        ([F, F, F, F], MonitoringCondition("failed", 60, 0, duration_seconds=120), [Transition(3, "ALARM")]),
        ([E, E, E], MonitoringCondition("failed", 180, 0), []),
    ],
)
def test_cloud_monitoring_evaluation(
    minutes: list[str | None], condition: MonitoringCondition, expected: list[Transition]
) -> None:
    assert monitoring_states(minutes, condition) == expected


# --- the targets, over every check's generated alarms -------------------------------------------------------------

PATTERNS = {
    "one transient failure": [F] + [P] * 8,
    "one transient error": [E] + [P] * 8,
    "one transient degraded run": [D] + [P] * 8,
    "two transients far apart": [F, P, P, P, F, P, P, P],
    "fails two runs in three": [F, F, P] * 4,
    "fails two runs in three, pass first": [P, F, F] * 4,
    "fails one run in two": [F, P] * 6,
    "steady failure": [F] * 10,
    "steady error": [E] * 10,
    "steady degraded": [D] * 10,
}
EXPECTED = {  # which of the rules fire, over the pattern
    "one transient failure": set(),
    "one transient error": set(),
    "one transient degraded run": set(),
    "two transients far apart": set(),
    "fails two runs in three": {"flapping"},
    "fails two runs in three, pass first": {"flapping"},
    "fails one run in two": {"flapping"},
    "steady failure": {"failed", "flapping"},
    "steady error": {"error"},
    "steady degraded": {"degraded"},
}
CASES = [
    (name, pattern)
    for name in ("apiserver-health", "be-eviction-rate", "apiserver-cert-expiry")
    for pattern in PATTERNS
]


def fired(configured: Settings, name: str, pattern: list[str]) -> dict[str, dict[str, int | None]]:
    """Per rule, the minute (after the fault) each cloud's alarm first fires over `pattern`, or None."""
    return {
        key: {cloud: first_alarm_minute(changes) for cloud, changes in clouds.items()}
        for key, clouds in alerting.replay(configured, name, pattern).items()
    }


@pytest.mark.parametrize(("name", "pattern"), CASES)
def test_generated_alarms_meet_the_targets_on_both_clouds(name: str, pattern: str) -> None:
    configured = every_check()
    firsts = fired(configured, name, PATTERNS[pattern])
    assert {key for key, clouds in firsts.items() if clouds["aws"] is not None} == EXPECTED[pattern]
    worst = alert_worst_case_seconds(configured, name)
    for key, clouds in firsts.items():
        assert clouds["aws"] == clouds["gcp"], f"{key}: the two clouds disagree over {pattern}"
        if clouds["aws"] is not None:
            assert clouds["aws"] * 60 <= worst, f"{key} fires {clouds['aws']} min after the fault; monitor {worst} s"


@pytest.mark.parametrize("misses", [1, 2, 3, 5])
def test_a_steady_failure_pages_no_later_than_the_monitor_whatever_the_tolerance(misses: int) -> None:
    configured = every_check(tolerated_misses=misses)
    for name in registry.names():
        first = fired(configured, name, [F] * (misses + 3))["failed"]["aws"]
        assert first is not None
        assert first * 60 <= alert_worst_case_seconds(configured, name), name
        # ... and not before the monitor's tolerance is spent: `misses` failed runs in a row raise nothing.
        assert fired(configured, name, [F] * misses + [P] * 4)["failed"]["aws"] is None, name


@pytest.mark.parametrize("misses", [2, 3, 4, 5, 8])
@pytest.mark.parametrize("cycle", [[F, F, P], [F, P, F], [P, F, F]])
def test_two_failures_in_three_notify_within_the_monitors_worst_case_whatever_the_tolerance(
    misses: int, cycle: list[str]
) -> None:
    """With `tolerated_misses: 1` the monitor's worst case spans two runs: F P F is seen a run later (documented)."""
    configured = every_check(tolerated_misses=misses)
    for name in registry.names():
        first = fired(configured, name, cycle * (misses + 2))["flapping"]
        assert first["aws"] == first["gcp"]
        assert first["aws"] is not None
        assert first["aws"] * 60 <= alert_worst_case_seconds(configured, name), name


def test_alarms_clear_when_the_check_passes_again_and_when_it_goes_silent() -> None:
    configured = every_check()
    rule = alerting.rules(configured, "apiserver-health")[0]
    recovered = run_lines(1, [F] * 4 + [P] * 4, line_after_seconds=run_seconds(configured))
    assert [t.state for t in cloudwatch_states(recovered, CloudWatchAlarm.of(rule))] == ["ALARM", "OK"]
    # Silence after failures clears the alarm (missing is not breaching): silence is the monitor's to alert on.
    silent = run_lines(1, [F] * 4, line_after_seconds=run_seconds(configured)) + [None] * 5
    assert [t.state for t in cloudwatch_states(silent, CloudWatchAlarm.of(rule))] == ["ALARM", "OK"]


# --- the generated AWS alarms ------------------------------------------------------------------------------------


def test_aws_alarms_are_the_rules_on_the_emf_metrics() -> None:
    configured = every_check()
    generated = resources(configured)
    alarms = generated["Resources"]
    assert len(alarms) == len(ALARM_RULES) * len(configured.enabled_checks())
    for name in configured.enabled_checks():
        for rule in alerting.rules(configured, name):
            properties = alarms[f"{logical_id(name)}{rule.key.capitalize()}Alarm"]["Properties"]
            topic, condition = {
                "page": ("AlarmTopicArn", "HasAlarmTopic"),
                "notify": ("NotifyTopicArn", "HasNotifyTopic"),
            }[rule.tier]
            actions = {"Fn::If": [condition, [{"Ref": topic}], {"Ref": "AWS::NoValue"}]}
            assert properties["AlarmName"] == alarm_name("stage1", name, rule.key)
            assert {
                key: properties[key] for key in properties if key not in ("AlarmName", "AlarmDescription", "Tags")
            } == {
                "Namespace": "Outpost",
                "MetricName": rule.metric,
                "Dimensions": [{"Name": "environment", "Value": "stage1"}, {"Name": "check", "Value": name}],
                "Statistic": "Maximum",
                "Period": rule.period_seconds,
                "EvaluationPeriods": rule.periods,
                "DatapointsToAlarm": rule.datapoints,
                "Threshold": 1,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                "TreatMissingData": "notBreaching",
                "AlarmActions": actions,
                "OKActions": actions,
            }
            description = properties["AlarmDescription"]["Fn::Sub"]
            assert f"${{RunbookBaseUrl}}docs/runbooks.md#{name} " in description
            assert f"/aws/lambda/outpost-stage1-{name}: fields @timestamp" in description
            assert f'filter check = "{name}"' in description
            assert "cluster cluster-eu" in description
            assert len(description) - len("${RunbookBaseUrl}") + RUNBOOK_BASE_MAX_LENGTH <= ALARM_DESCRIPTION_LIMIT
            assert "${" not in description.replace("${RunbookBaseUrl}", "")  # nothing else for Fn::Sub to resolve
    assert not [key for key in alarms if "Errors" in key]  # Lambda's Errors alarm is gone (see packaging.aws)


def test_every_runbook_link_points_at_a_section_of_the_runbooks_page() -> None:
    page = (REPO / RUNBOOKS_PAGE).read_text()
    for name in registry.names():
        assert f"\n## `{name}`\n" in page, name  # GitHub's anchor of that heading is the check's name


def test_cfn_lint_finds_nothing_in_the_alarms_template() -> None:
    """The alarms, parameters and conditions `outpost package` adds to the stack, linted by cfn-lint (informational
    rules included) as a template of their own: they reference no resource Serverless generates. The whole stack
    is linted after `serverless package` by tests/functional/test_deployment.py."""
    odd_cluster = "eu ${AWS::Region} " + "x" * 300  # free text: Fn::Sub must not read it, the limit must hold
    variants = (every_check(), every_check(schedule_minutes=60, tolerated_misses=100), every_check(odd_cluster))
    for configured in (*variants, *(held_back(variant) for variant in variants)):
        generated = resources(configured)
        template = {
            "AWSTemplateFormatVersion": "2010-09-09",
            "Parameters": generated["Parameters"],
            "Conditions": generated["Conditions"],
            "Rules": generated["Rules"],
            "Resources": generated["Resources"],
        }
        findings = lint(json.dumps(template), config=ManualArgs(regions=["eu-west-1"], include_checks=["I"]))
        assert [f"{f.rule.id} {f.path} {f.message}" for f in findings] == []
        for alarm in generated["Resources"].values():
            if not isinstance(alarm["Properties"].get("AlarmDescription"), dict):
                continue  # the inhibitor's role; a suppressor's description names checks only
            description = alarm["Properties"]["AlarmDescription"]["Fn::Sub"]
            assert len(description) - len("${RunbookBaseUrl}") + RUNBOOK_BASE_MAX_LENGTH <= ALARM_DESCRIPTION_LIMIT
            assert "${AWS::" not in description


# --- the generated Google Cloud alert policies -------------------------------------------------------------------


def test_gcp_variables_carry_the_same_rules() -> None:
    configured = settings({name: {} for name in registry.names()}, platform="gcf", environment="gcp-dev")
    variables = terraform_variables(configured, "../../build/x.zip", "0" * 64)
    alarms = variables["alarms"]
    assert len(alarms) == len(ALARM_RULES) * len(configured.enabled_checks())
    for name in configured.enabled_checks():
        for rule in alerting.rules(configured, name):
            assert alarms[f"{name}/{rule.key}"] == {
                "check": name,
                "display_name": alarm_name("gcp-dev", name, rule.key),
                "status": rule.outcome,
                "window_seconds": rule.window_seconds,
                "threshold": rule.datapoints - 1,
                "wait_seconds": 0,
                "quiet": [],
                "tier": rule.tier,
                "summary": alerting.summary(configured, rule),
                "runbook_path": f"docs/runbooks.md#{name}",
                "logs_query": alerting.logs_explorer_query("gcp-dev", name),
            }
