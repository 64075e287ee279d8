"""The cloud alarms of a check, one meaning on both clouds, and an evaluator of their documented semantics.

Every scheduled run writes one log line carrying its outcome (`outpost.logs.emit_run_log`, `status`). Each cloud
counts those lines per check: CloudWatch through the line's embedded metric format (namespace `Outpost`,
dimensions environment and check, one metric per outcome, 1 or 0 per run), Cloud Monitoring through a log-based
metric on `jsonPayload.status`. `rules` derives, from the check's schedule and its Vigilmon monitor's
`tolerated_misses`, what alarms on those counts, the same four on both clouds:

- `failed`: the check failed `tolerated_misses + 1` runs in a row, when its monitor alerts on the silence too
  (never earlier than the monitor would stay quiet, never later than its worst case). Pages for a critical check,
  notifies for a warning one (Vigilmon's tiers).
- `flapping`: `k` failed runs in the last `n` (2 of 3 by default). The monitor forgets misses at the next ping, so
  a check failing two runs in every three never alerts there; this rule notifies within the monitor's worst case,
  and a single transient failed run never raises it.
- `error`: the probe could not observe `tolerated_misses + 1` runs in a row (the API server, a credential, a
  deadline): notifies, apart from `failed`, so "the component is broken" and "we cannot see" are told apart.
- `degraded`: degraded `tolerated_misses + 1` runs in a row: notifies (a degraded run pings, so Vigilmon says
  nothing).

Silence (no run line at all) raises none of them: that is the heartbeat monitor's job, and a second alarm on it
would be a second page for one incident.

The evaluator (`cloudwatch_states`, `monitoring_states`) replays a sequence of run outcomes, minute by minute,
through each generated alarm as the providers document their evaluation, and says when each fires and clears:

- CloudWatch (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation-window.html,
  .../alarms-and-missing-data.html): once a minute, over a sliding window of `EvaluationPeriods` periods of
  `Period` seconds ending at the evaluation (the default `SlidingWindow`); each period's datapoint is the
  statistic over the values that arrived in it, or missing; when datapoints are missing, the most recent real
  ones in the evaluation range are used first and only the rest are filled in per `TreatMissingData`; ALARM
  when at least `DatapointsToAlarm` of the `EvaluationPeriods` breach the threshold, else OK. CloudWatch's
  evaluation range reaches further back than the window by an amount it does not document: the evaluator
  looks back `lookback_periods` more (default none, which fills in sooner: no earlier alarm than CloudWatch's).
- Cloud Monitoring (docs.cloud.google.com/monitoring/alerts/concepts-indepth): the condition sums the matching
  runs over a sliding alignment period ending at the evaluation and is met when the sum exceeds the threshold;
  with `duration` 0 an incident opens at once and closes when the condition is no longer met (missing data
  makes it inactive: `EVALUATION_MISSING_DATA_INACTIVE`).

A value written in minute `m` is evaluated from the end of that minute (`m + 1`), the first evaluation that can
see it. Pure functions only: no cloud is called.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from outpost.config import Settings
from outpost.deploy import (
    ALARM_RULES,
    RULE_OUTCOMES,
    function_name,
    held_parents,
    max_window_seconds,
    parent_groups,
    run_seconds,
    schedule_minutes,
    severity,
    tolerance_runs,
)
from outpost.logs import METRIC_NAMESPACE, OUTCOME_METRICS

NAMESPACE: Final = METRIC_NAMESPACE
METRICS: Final = {status.value: name for status, name in OUTCOME_METRICS.items()}
"""Outcome (the line's `status`) -> the CloudWatch metric the line publishes for it (EMF)."""

FLAPPING_WINDOW_MIN_RUNS: Final = 3
"""The flapping rule looks at no fewer runs than this, so two failures can never be a single transient."""

Tier = Literal["page", "notify"]
State = Literal["OK", "ALARM", "INSUFFICIENT_DATA"]


@dataclass(frozen=True)
class Rule:
    """One alarm of one check: `datapoints` runs with `outcome` among the last `periods`, one run per period."""

    check: str
    key: str
    outcome: str
    datapoints: int
    periods: int
    period_seconds: int
    tier: Tier
    meaning: str

    @property
    def window_seconds(self) -> int:
        return self.periods * self.period_seconds

    @property
    def metric(self) -> str:
        return METRICS[self.outcome]


def flapping(settings: Settings, name: str) -> tuple[int, int]:
    """(k, n) of the flapping rule: `k` failed runs among the last `n`.

    `n` is the runs the monitor's worst case spans (`tolerated_misses + 1`, at least 3); `k` is the fewest failures
    any `n` runs in a row of a check failing two in three contain (floor(2n/3)), at least 2: such a check alerts
    by the monitor's worst case, and one transient failed run never does. With `tolerated_misses: 1` the
    monitor's worst case spans two runs, and a failure, a pass and a failure (2 of 3) alerts a run after it.
    """
    period = schedule_minutes(settings, name) * 60
    longest = max(1, max_window_seconds(period) // period)
    runs = min(max(FLAPPING_WINDOW_MIN_RUNS, tolerance_runs(settings, name)), longest)
    return min(runs, max(2, (2 * runs) // 3)), runs


def rules(settings: Settings, name: str) -> list[Rule]:
    """The alarms of check `name`, in `ALARM_RULES` order (see the module doc)."""
    period = schedule_minutes(settings, name) * 60
    steady = tolerance_runs(settings, name)
    k, n = flapping(settings, name)
    failed_tier: Tier = "page" if severity(settings, name) == "critical" else "notify"
    in_a_row = f"{steady} runs in a row" if steady > 1 else "one run"
    every = f"{n} runs ({period // 60} min each)"
    made = {
        "failed": Rule(
            name, "failed", RULE_OUTCOMES["failed"], steady, steady, period, failed_tier, f"failed {in_a_row}"
        ),
        "flapping": Rule(
            name, "flapping", RULE_OUTCOMES["flapping"], k, n, period, "notify", f"failed {k} of the last {every}"
        ),
        "error": Rule(
            name, "error", RULE_OUTCOMES["error"], steady, steady, period, "notify", f"could not observe {in_a_row}"
        ),
        "degraded": Rule(
            name, "degraded", RULE_OUTCOMES["degraded"], steady, steady, period, "notify", f"degraded {in_a_row}"
        ),
    }
    return [made[key] for key in ALARM_RULES]


def logs_insights_query(check: str) -> str:
    """CloudWatch Logs Insights, on the check's log group: its latest run line."""
    return (
        f'fields @timestamp, status, summary, run_id, cluster | filter check = "{check}" and ispresent(status) '
        "| sort @timestamp desc | limit 1"
    )


def logs_explorer_query(environment: str, check: str) -> str:
    """Cloud Logging (Logs Explorer): the check's run lines, newest first as the explorer shows them."""
    return (
        f'resource.type="cloud_run_revision" resource.labels.service_name="{function_name(environment, check)}" '
        f'jsonPayload.check="{check}" jsonPayload.status:*'
    )


CLUSTER_NAME_SHOWN: Final = 80
"""At most this much of `cluster.name` (free text) goes into an alarm's description, which has a size limit."""


def summary(settings: Settings, rule: Rule) -> str:
    """What the alarm says first: check, environment, cluster and what held."""
    cluster = settings.cluster.name
    if len(cluster) > CLUSTER_NAME_SHOWN:
        cluster = cluster[: CLUSTER_NAME_SHOWN - 1] + "…"
    return (
        f"Outpost check {rule.check} ({settings.environment}, cluster {cluster}) {rule.meaning}; "
        f"{'pages' if rule.tier == 'page' else 'notifies'}"
    )


# --- the evaluator -------------------------------------------------------------------------------------------

Outcomes = Sequence[str | None]
"""One entry per minute: the outcome of the run whose log line was written in that minute, or None (no line)."""

_COMPARE: Final[dict[str, Callable[[float, float], bool]]] = {
    "GreaterThanOrEqualToThreshold": operator.ge,
    "GreaterThanThreshold": operator.gt,
    "LessThanThreshold": operator.lt,
    "LessThanOrEqualToThreshold": operator.le,
}
_STATISTICS: Final[dict[str, Callable[[list[float]], float]]] = {
    "Maximum": max,
    "Minimum": min,
    "Sum": math.fsum,
    "SampleCount": lambda values: float(len(values)),
    "Average": lambda values: math.fsum(values) / len(values),
}


@dataclass(frozen=True)
class CloudWatchAlarm:
    """The evaluated fields of an AWS::CloudWatch::Alarm on one run metric (what `packaging.aws` writes)."""

    metric: str
    period_seconds: int
    evaluation_periods: int
    datapoints_to_alarm: int
    threshold: float = 1
    comparison: str = "GreaterThanOrEqualToThreshold"
    statistic: str = "Maximum"
    treat_missing_data: str = "notBreaching"

    @classmethod
    def of(cls, rule: Rule) -> CloudWatchAlarm:
        return cls(rule.metric, rule.period_seconds, rule.periods, rule.datapoints)


@dataclass(frozen=True)
class MonitoringCondition:
    """The evaluated fields of a Cloud Monitoring threshold condition on the run-count metric (infra/gcp): the sum
    of `outcome` runs over a sliding `alignment_seconds`, compared with `threshold` (COMPARISON_GT)."""

    outcome: str
    alignment_seconds: int
    threshold: float
    duration_seconds: int = 0

    @classmethod
    def of(cls, rule: Rule) -> MonitoringCondition:
        return cls(rule.outcome, rule.window_seconds, rule.datapoints - 1)


@dataclass(frozen=True)
class Transition:
    minute: int
    state: State


def metric_values(outcomes: Outcomes, metric: str) -> list[float | None]:
    """The values the run lines publish for `metric` (EMF: 1 for the run's own outcome, 0 for the others)."""
    outcome = next(key for key, name in METRICS.items() if name == metric)
    return [None if seen is None else float(seen == outcome) for seen in outcomes]


def _period_values(values: Sequence[float | None], start: int, end: int, statistic: str) -> float | None:
    present = [v for v in values[max(start, 0) : max(end, 0)] if v is not None]
    return _STATISTICS[statistic](present) if present else None


def cloudwatch_states(outcomes: Outcomes, alarm: CloudWatchAlarm, *, lookback_periods: int = 0) -> list[Transition]:
    """Each state change of `alarm` over `outcomes` (starting OK), evaluated at the end of every minute."""
    if alarm.period_seconds % 60:
        raise ValueError("the evaluator models periods of whole minutes")
    period = alarm.period_seconds // 60
    values = metric_values(outcomes, alarm.metric)
    compare = _COMPARE[alarm.comparison]
    state: State = "OK"
    changes: list[Transition] = []
    for now in range(1, len(values) + 1):
        span = alarm.evaluation_periods + lookback_periods
        points = [
            _period_values(values, now - k * period, now - (k - 1) * period, alarm.statistic)
            for k in range(1, span + 1)
        ]
        real = [p for p in points if p is not None]
        if len(real) >= alarm.evaluation_periods:
            # No datapoint missing in the window, or enough real ones in the range: the most recent real ones.
            breaching = sum(compare(p, alarm.threshold) for p in real[: alarm.evaluation_periods])
        else:
            # Too few: every real one, and the rest filled in as TreatMissingData says (ignore, missing: not at all).
            filled = alarm.treat_missing_data == "breaching"
            breaching = sum(compare(p, alarm.threshold) for p in real)
            breaching += (alarm.evaluation_periods - len(real)) * filled
        new: State
        if not real and alarm.treat_missing_data == "ignore":
            new = state
        elif not real and alarm.treat_missing_data == "missing":
            new = "INSUFFICIENT_DATA"
        else:
            new = "ALARM" if breaching >= alarm.datapoints_to_alarm else "OK"
        if new != state:
            changes.append(Transition(now, new))
            state = new
    return changes


def monitoring_states(outcomes: Outcomes, condition: MonitoringCondition) -> list[Transition]:
    """Each open (ALARM) and close (OK) of an incident of `condition` over `outcomes`, minute by minute: a policy
    of that one condition (`policy_states`)."""
    return policy_states({"": outcomes}, "", MonitoringPolicy(condition))


def first_alarm_minute(changes: Sequence[Transition]) -> int | None:
    return next((change.minute for change in changes if change.state == "ALARM"), None)


def run_lines(
    schedule: int, runs: Sequence[str | None], *, line_after_seconds: float, after_minutes: int = 0
) -> list[str | None]:
    """The per-minute outcomes of runs every `schedule` minutes: run `i` (0-based) starts at minute
    `after_minutes + (i + 1) * schedule` (the fault comes right after a healthy run at `after_minutes`, the
    monitor model's worst case) and writes its line `line_after_seconds` later (`outpost.deploy.run_seconds`: the
    latest a run ends); then two periods of silence."""
    total = after_minutes + (len(runs) + 2) * schedule + math.ceil(line_after_seconds / 60) + 1
    minutes: list[str | None] = [None] * total
    for index, outcome in enumerate(runs):
        written = int(((after_minutes + (index + 1) * schedule) * 60 + line_after_seconds) // 60)
        minutes[written] = outcome
    return minutes


def replay(settings: Settings, name: str, runs: Sequence[str]) -> dict[str, dict[str, list[Transition]]]:
    """Check `name`'s generated alarms over `runs` (the outcomes of its scheduled runs after a fault, each line
    written a run's length after its start), per rule and cloud (`aws`, `gcp`): the state changes, in minutes
    after the fault. What a page of pages per fault is made from."""
    lines = run_lines(schedule_minutes(settings, name), runs, line_after_seconds=run_seconds(settings))
    return {
        rule.key: {
            "aws": cloudwatch_states(lines, CloudWatchAlarm.of(rule)),
            "gcp": monitoring_states(lines, MonitoringCondition.of(rule)),
        }
        for rule in rules(settings, name)
    }


# --- hold-back of the cloud alarms (AWS: composite alarms with an actions suppressor) ---------------------------

SUPPRESSING_RULES: Final = ("failed", "error")
"""A parent's alarms that hold its dependants' alarms back: "it is broken" and "we cannot see it" (the
inhibitor's statuses, `outpost.holdback.decision.HOLDING_STATUSES`); never `flapping` nor `degraded`."""

HELD_RULES: Final = ("failed", "error", "degraded")
"""A dependant's alarms that are held back while a parent fails. Never `flapping`: held, it would wait for the
parents' alarms (`Suppression.wait_seconds`, 3 minutes with the defaults) and a check failing two runs in three,
whose monitor never alerts, would be told after its monitor's worst case (420 s against 250 s, for a 1-minute
schedule). It notifies, never pages: a parent's outage adds, at most, its failing dependants' flapping
notifications, no page."""

EVALUATION_SECONDS: Final = 60
"""CloudWatch evaluates an alarm once a minute: a state can be seen up to a minute after its datapoint."""


@dataclass(frozen=True)
class Suppression:
    """How a dependant's alarm is held back on AWS: a composite alarm wrapping it carries its actions, with
    `suppressor` (ALARM while any of `parents`' failed or error alarm is) as its ActionsSuppressor."""

    parents: tuple[str, ...]
    wait_seconds: int
    extension_seconds: int


def held_note(held: Suppression) -> str:
    """What an alarm's description says of its hold-back (both clouds)."""
    return (
        f"held back while {', '.join(held.parents)} fails or cannot observe (it waits {held.wait_seconds} s for "
        f"them, and {held.extension_seconds} s after they clear)"
    )


def _whole_minutes(seconds: float) -> int:
    return 60 * math.ceil(seconds / 60)


def suppression(settings: Settings, rule: Rule) -> Suppression | None:
    """The suppression of `rule`'s actions, or None (hold-back off, its check depends on no enabled check, or a rule
    never held: `HELD_RULES`).

    - wait (ActionsSuppressorWaitPeriod): after a common fault, how much later than this alarm a parent's can
      reach ALARM: the fault may come right after a parent's run, whose alarm then sees its last breaching line
      `datapoints` periods, a run and a minute's evaluation later; and right before this check's run, whose
      alarm may then see it `datapoints - 1` periods and a run later. At least a minute. A dependant's alarm for
      a cause of its own notifies that much later.
    - extension (ActionsSuppressorExtensionPeriod): once the parents' alarms clear, how long this one may take to
      clear when its check recovered with them: the runs its window needs to fall below `datapoints`, a run's
      length and a minute. Still in ALARM after it, it notifies: the dependant is failing on its own.
    """
    parents = held_parents(settings, rule.check)
    if not parents or rule.key not in HELD_RULES:
        return None
    run = run_seconds(settings)
    latest_parent = max(
        parent_rule.datapoints * parent_rule.period_seconds + run + EVALUATION_SECONDS
        for parent in parents
        for parent_rule in rules(settings, parent)
        if parent_rule.key in SUPPRESSING_RULES
    )
    earliest = (rule.datapoints - 1) * rule.period_seconds + run
    wait = _whole_minutes(max(EVALUATION_SECONDS, latest_parent - earliest))
    extension = _whole_minutes((rule.periods - rule.datapoints + 1) * rule.period_seconds + run + EVALUATION_SECONDS)
    return Suppression(tuple(parents), wait, extension)


def composite_actions(
    alarm: Sequence[Transition],
    suppressor: Sequence[Transition],
    length: int,
    *,
    wait_minutes: int,
    extension_minutes: int,
) -> list[int]:
    """The minutes at which a composite alarm wrapping `alarm` (ALARM exactly when it is) performs its ALARM
    actions, with `suppressor` as its ActionsSuppressor, as CloudWatch documents it (API CompositeAlarm,
    `ActionsSuppressedBy`): while the suppressor is in ALARM the actions are suppressed; entering ALARM while the
    suppressor is not, the composite waits up to the wait period for it to enter ALARM, then acts; once the
    suppressor leaves ALARM, it waits the extension period, then acts if still in ALARM. A suppressor in OK or
    INSUFFICIENT_DATA never suppresses. One action per ALARM episode; resolutions (OK actions) are not held."""

    def states(changes: Sequence[Transition]) -> list[State]:
        state: State = "OK"
        by_minute = {change.minute: change.state for change in changes}
        found: list[State] = []
        for minute in range(length + 1):
            state = by_minute.get(minute, state)
            found.append(state)
        return found

    raised, held = states(alarm), states(suppressor)
    performed: list[int] = []
    due: int | None = None
    acted = False
    for minute in range(length + 1):
        if raised[minute] != "ALARM":
            due, acted = None, False
            continue
        if acted:
            continue
        if held[minute] == "ALARM":
            due = None
        elif due is None:
            entering = minute == 0 or raised[minute - 1] != "ALARM"
            left_suppressor = minute > 0 and held[minute - 1] == "ALARM"
            if left_suppressor:
                due = minute + extension_minutes
            elif entering:
                due = minute + wait_minutes
        if due is not None and minute >= due:
            performed.append(minute)
            acted, due = True, None
    return performed


def any_alarm(changes: Sequence[Sequence[Transition]], length: int) -> list[Transition]:
    """The state changes of a composite alarm `ALARM(a) OR ALARM(b) ...` over its alarms' changes."""
    raised = [{change.minute: change.state for change in alarm} for alarm in changes]
    current: list[State] = ["OK"] * len(changes)
    state: State = "OK"
    found: list[Transition] = []
    for minute in range(length + 1):
        for index, alarm in enumerate(raised):
            current[index] = alarm.get(minute, current[index])
        new: State = "ALARM" if "ALARM" in current else "OK"
        if new != state:
            found.append(Transition(minute, new))
            state = new
    return found


# --- hold-back of the cloud alarms (Google Cloud: a policy that also needs its parents quiet) ---------------------

HOLDING_OUTCOMES: Final = SUPPRESSING_RULES
"""The parents' run outcomes that hold back on Google Cloud: those the suppressing rules count."""


@dataclass(frozen=True)
class ParentsQuiet:
    """A condition of a held-back dependant's Cloud Monitoring policy: each of `parents` (which share a schedule and
    a tolerance) had fewer than `runs` failed-or-error runs within the last `alignment_seconds` (COMPARISON_LT per
    parent's series, trigger 100 %), for `duration_seconds` in a row. Met on missing data
    (EVALUATION_MISSING_DATA_ACTIVE): a parent that wrote no failed or error line, because it is healthy or
    because its function is dead, holds nothing back."""

    parents: tuple[str, ...]
    alignment_seconds: int
    runs: int
    duration_seconds: int

    def met(self, lines: Mapping[str, Outcomes], now: int) -> bool:
        window = self.alignment_seconds // 60
        return all(
            sum(1 for seen in lines.get(parent, ())[max(now - window, 0) : now] if seen in HOLDING_OUTCOMES) < self.runs
            for parent in self.parents
        )


@dataclass(frozen=True)
class MonitoringPolicy:
    """A check's alert policy for one rule: `own` (its runs of the rule's outcome) AND, when held back, every
    `quiet` condition (combiner AND: "an incident is created only if all the conditions are met simultaneously").
    Held back, `own` waits `Suppression.wait_seconds` (its `duration`), the parents' alarms' chance to catch up,
    and each `quiet` condition waits `Suppression.extension_seconds` after the parents' last failures, the
    dependant's chance to clear with them: CloudWatch's wait and extension periods, on Google Cloud."""

    own: MonitoringCondition
    quiet: tuple[ParentsQuiet, ...] = ()
    held: Suppression | None = None
    """What it is held back by (its parents, wait and extension), or None."""


def monitoring_policy(settings: Settings, rule: Rule) -> MonitoringPolicy:
    """The Cloud Monitoring policy of `rule`: held back by a condition per group of parents sharing a schedule and a
    tolerance when hold-back is on and its check depends on an enabled check (`suppression`), else `own` alone.

    A parent counts as failing once `tolerance_runs` of its runs in a row were failed or error: its `failed` or
    `error` alarm's threshold, over both outcomes at once (a parent alternating between them holds back too)."""
    own = MonitoringCondition.of(rule)
    held = suppression(settings, rule)
    if held is None:
        return MonitoringPolicy(own)
    quiet = tuple(
        ParentsQuiet(tuple(parents), period * runs, runs, held.extension_seconds)
        for (period, runs), parents in sorted(parent_groups(settings, held.parents).items())
    )
    waited = MonitoringCondition(own.outcome, own.alignment_seconds, own.threshold, held.wait_seconds)
    return MonitoringPolicy(waited, quiet, held)


def policy_states(lines: Mapping[str, Outcomes], check: str, policy: MonitoringPolicy) -> list[Transition]:
    """Each open (ALARM) and close (OK) of an incident of `policy` of check `check`, minute by minute, over every
    check's `lines`: open while every condition has been met for its duration (the parents' quiet conditions are
    taken as met since before the first minute: the replay starts healthy), closed when one no longer is."""
    own = policy.own
    if any(value % 60 for value in (own.alignment_seconds, own.duration_seconds)) or any(
        q.alignment_seconds % 60 or q.duration_seconds % 60 for q in policy.quiet
    ):
        raise ValueError("the evaluator models whole minutes")
    outcomes = lines.get(check, ())
    length = max((len(minutes) for minutes in lines.values()), default=0)
    window = own.alignment_seconds // 60
    own_since: int | None = None
    quiet_since: list[int | None] = [-(10**9)] * len(policy.quiet)
    state: State = "OK"
    found: list[Transition] = []
    for now in range(1, length + 1):
        count = sum(1 for seen in outcomes[max(now - window, 0) : now] if seen == own.outcome)
        own_since = (own_since if own_since is not None else now) if count > own.threshold else None
        ready = own_since is not None and now - own_since >= own.duration_seconds // 60
        for index, condition in enumerate(policy.quiet):
            if condition.met(lines, now):
                quiet_since[index] = quiet_since[index] if quiet_since[index] is not None else now
            else:
                quiet_since[index] = None
            since = quiet_since[index]
            ready = ready and since is not None and now - since >= condition.duration_seconds // 60
        new: State = "ALARM" if ready else "OK"
        if new != state:
            found.append(Transition(now, new))
            state = new
    return found


@dataclass(frozen=True)
class HeldReplay:
    """One AWS alarm over a replayed fault: its state changes, and the minutes its actions were performed."""

    states: list[Transition]
    actions: list[int]

    @property
    def suppressed(self) -> bool:
        """It reached ALARM and notified nobody."""
        return first_alarm_minute(self.states) is not None and not self.actions


def replay_fault(
    settings: Settings,
    runs: dict[str, Sequence[str | None]],
    *,
    extra_minutes: int = 0,
    cloud: Literal["aws", "gcp"] = "aws",
) -> dict[str, dict[str, HeldReplay]]:
    """Every enabled check's alarms on `cloud` over one fault: `runs` gives the outcomes of a check's scheduled runs
    after the fault (None: the run wrote no line; a check not named stays `ok`), each line written a run's
    length after its start. Per check and rule: the state changes of the alarm on the check's own runs, and the
    minutes its actions are performed, held back as the generated templates hold them: on AWS by the composite
    alarms (`suppression`, `composite_actions`), on Google Cloud by the policy's parents' quiet conditions
    (`monitoring_policy`, `policy_states`: a notification when an incident opens). Without hold-back, an alarm
    acts when it enters ALARM. What a page of pages and notifications per fault is made from."""
    minutes = extra_minutes + max(
        (len(outcomes) * schedule_minutes(settings, name) for name, outcomes in runs.items()), default=0
    )
    lines: dict[str, list[str | None]] = {}
    for name in settings.enabled_checks():
        schedule = schedule_minutes(settings, name)
        outcomes = list(runs.get(name, []))
        outcomes += ["ok"] * max(0, math.ceil(minutes / schedule) - len(outcomes))  # then healthy
        lines[name] = run_lines(schedule, outcomes, line_after_seconds=run_seconds(settings))
    length = max(len(minutes) for minutes in lines.values()) if lines else 0
    if cloud == "gcp":
        return {
            name: {
                rule.key: HeldReplay(
                    monitoring_states(lines[name], MonitoringCondition.of(rule)),
                    [
                        change.minute
                        for change in policy_states(lines, name, monitoring_policy(settings, rule))
                        if change.state == "ALARM"
                    ],
                )
                for rule in rules(settings, name)
            }
            for name in settings.enabled_checks()
        }
    raised = {
        name: {
            rule.key: (rule, cloudwatch_states(lines[name], CloudWatchAlarm.of(rule))) for rule in rules(settings, name)
        }
        for name in settings.enabled_checks()
    }
    replayed: dict[str, dict[str, HeldReplay]] = {}
    for name, by_rule in raised.items():
        replayed[name] = {}
        for key, (rule, changes) in by_rule.items():
            held = suppression(settings, rule)
            if held is None:
                actions = [change.minute for change in changes if change.state == "ALARM"]
            else:
                suppressor = any_alarm(
                    [raised[parent][parent_key][1] for parent in held.parents for parent_key in SUPPRESSING_RULES],
                    length,
                )
                actions = composite_actions(
                    changes,
                    suppressor,
                    length,
                    wait_minutes=held.wait_seconds // 60,
                    extension_minutes=held.extension_seconds // 60,
                )
            replayed[name][key] = HeldReplay(changes, actions)
    return replayed
