"""Running one check: deadline, observation, judgement, heartbeat, one log line.

`run_check` never raises: every failure becomes an `error` result naming its cause and the runbook's next step,
with exactly one log line, carrying the run's id and the cluster's name. The observation has one wall-clock
deadline every blocking step honours, and the heartbeat a budget of its own, so nothing outlives the run. A ping
goes only for ok/degraded of an enabled, reporting check, never after a stop; an undelivered ping is `error`; no
secret reaches the result. A failing check with dependants asks `hold` to hold them back (`outpost.holdback`),
recorded in `details.hold_back`.
See docs/contracts.md "Result contract", "Heartbeat contract" and docs/reliability.md.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

import httpx

from outpost import interrupt, redaction, registry, runbook
from outpost.bounded import bounded_transport
from outpost.cluster import Cluster, ClusterWriter, Deadline
from outpost.config import Settings
from outpost.errors import OutpostError
from outpost.heartbeat import HeartbeatClient, worst_case_seconds
from outpost.holdback.decision import request_for
from outpost.holdback.senders import HoldSender
from outpost.logs import emit_run_log
from outpost.result import NextStep, Result, Status
from outpost.secrets import resolve
from outpost.settings import check_params

ClusterFactory = Callable[[Settings, Deadline], Cluster]


def _default_cluster(settings: Settings, deadline: Deadline) -> Cluster:
    return Cluster.from_settings(settings.cluster, deadline)


def _default_writer(settings: Settings, deadline: Deadline) -> Cluster:
    return ClusterWriter.from_settings(settings.cluster, deadline)


def settings_for_check(settings: Settings, name: str) -> Settings:
    """`settings` with `cluster.auth` replaced by the check's own `cluster_auth`, when it has one."""
    configured = settings.checks.get(name)
    if configured is None or configured.cluster_auth is None:
        return settings
    cluster = settings.cluster.model_copy(update={"auth": configured.cluster_auth})
    return settings.model_copy(update={"cluster": cluster})


def run_check(
    settings: Settings,
    name: str,
    *,
    report: bool = True,
    log: bool = True,
    cluster_factory: ClusterFactory = _default_cluster,
    run_id: str | None = None,
    counted: bool = False,
    metrics: bool = False,
    hold: HoldSender | None = None,
) -> Result:
    """Run check `name` once and write its log line (`run_id`: the platform's id of the invocation, else a new
    one; `counted`: the run counts towards the cloud alarms; `metrics`: its line carries the CloudWatch metrics
    that count it on AWS; `hold`: where a failing run asks for its dependants to be held back)."""
    started = time.monotonic()
    try:
        result = _observe(settings, name, cluster_factory)
        if report and result.status.healthy:
            result = (
                _stopped(settings, result, "before its heartbeat")
                if interrupt.requested()
                else _report(settings, result)
            )
        if report and hold is not None:
            result = _hold_back(settings, result, hold)
    except Exception as error:  # noqa: BLE001 - the last line of fail-closed: never a crash, always a result
        cause = f"{name}: internal error {type(error).__name__}: {_one_line(error)}"
        result = Result.error(name, cause, _next(settings, name, runbook.INTERNAL))
    result = result.model_copy(update={"duration_ms": int((time.monotonic() - started) * 1000)})
    if log:
        try:
            emit_run_log(
                result,
                environment=settings.environment,
                cluster=settings.cluster.name,
                run_id=run_id,
                counted=counted,
                metrics=metrics,
            )
        except Exception as error:  # noqa: BLE001 - a broken log stream must not turn into a crash
            print(f"outpost: could not write the run log line ({type(error).__name__})", file=sys.stderr)
    return result


def _next(settings: Settings, name: str, entry: runbook.Runbook) -> NextStep:
    return entry.step(check=name, environment=settings.environment)


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return redaction.redact(lines[0][:200]) if lines else "no detail"


def _stopped(settings: Settings, result: Result, when: str) -> Result:
    """`error`: the run was stopped (SIGINT/SIGTERM) `when`; nothing is pinged after a stop."""
    cause = f"{result.check}: the run was stopped {when}; not pinged"
    if result.status.healthy:
        cause = f"{result.check}: observed {result.status.value} but the run was stopped {when}; not pinged"
    return Result(
        check=result.check,
        status=Status.ERROR,
        summary=cause,
        errors=[cause],
        next_steps=[_next(settings, result.check, runbook.STOPPED)],
        details={**result.details, "observed_status": result.status.value, "stopped": True},
    )


class _StopGuard(httpx.BaseTransport):
    """The heartbeat's transport: refuses to open a request once a stop was asked for (each retry included)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        interrupt.check("its heartbeat")
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def _observe(settings: Settings, name: str, cluster_factory: ClusterFactory) -> Result:
    if interrupt.requested():
        cause = f"{name}: the run was stopped before it started; nothing was observed"
        return Result.error(name, cause, _next(settings, name, runbook.STOPPED))
    try:
        spec = registry.get(name)
        params = check_params(settings, name)
    except KeyError as error:
        return Result.error(name, str(error.args[0]), _next(settings, name, runbook.SETUP))
    except OutpostError as error:
        return Result.error(name, str(error), _next(settings, name, runbook.for_error(error)))
    configured = settings.checks.get(name)
    if spec.opt_in and (configured is None or not configured.enabled):
        state = "not configured" if configured is None else "disabled"
        return Result.error(
            name,
            f"{name}: opt-in job {state} in environment {settings.environment} "
            f"(enable checks.{name}); nothing was done",
            _next(settings, name, runbook.SETUP),
        )
    if spec.writes and cluster_factory is _default_cluster:
        cluster_factory = _default_writer
    settings = settings_for_check(settings, name)
    deadline = Deadline(settings.cluster.deadline_seconds)
    try:
        with cluster_factory(settings, deadline) as cluster:
            data = spec.fetch(cluster, params)
            reads = dict(cluster.reads)
        result = spec.judge(data, params, datetime.now(UTC))
        # How each collection was read (listed, or followed by a warm instance, and why): what an operator
        # reads to see what a run cost, and what the sameness tests compare.
        return result.model_copy(update={"details": {**result.details, "reads": reads}}) if reads else result
    except OutpostError as error:
        return Result.error(spec.name, str(error), _next(settings, spec.name, runbook.for_error(error)))
    except Exception as error:  # noqa: BLE001 - fail closed: a bug in a check is still "could not observe"
        cause = f"{spec.name}: internal error {type(error).__name__}: {_one_line(error)}"
        return Result.error(spec.name, cause, _next(settings, spec.name, runbook.INTERNAL))


def _hold_back(settings: Settings, result: Result, hold: HoldSender) -> Result:
    """A failing parent's run asks the inhibitor to hold its dependants back (`outpost.holdback`); what it asked,
    or why it could not, goes in `details.hold_back`. The status never changes: an unsent request only means the
    dependants alert as they would without hold-back."""
    request = request_for(settings, result)
    if request is None:
        return result
    if interrupt.requested():
        account = "not asked: the run was stopped"
    else:
        try:
            account = hold.send(request)
        except Exception as error:  # noqa: BLE001 - the dependants then alert as without hold-back; never a crash
            reason = str(error) if isinstance(error, OutpostError) else f"{type(error).__name__}: {_one_line(error)}"
            account = f"not asked, the dependants alert: {reason}"
    return result.model_copy(update={"details": {**result.details, "hold_back": account}})


def _report(settings: Settings, result: Result) -> Result:
    configured = settings.checks.get(result.check)
    if configured is None or configured.heartbeat is None:
        return result.model_copy(update={"details": {**result.details, "heartbeat": "not configured"}})
    if not configured.enabled:
        return result.model_copy(update={"details": {**result.details, "heartbeat": "check disabled, not pinged"}})
    heartbeat = settings.heartbeat
    # One budget for the whole delivery, resolving the URL included: the heartbeat's worst case.
    budget = Deadline(worst_case_seconds(heartbeat.timeout_seconds, heartbeat.retries, heartbeat.backoff_seconds))
    try:
        url = resolve(configured.heartbeat, timeout=budget.remaining())
        delivery = max(0.1, budget.remaining())
        with HeartbeatClient(
            timeout_seconds=heartbeat.timeout_seconds,
            retries=heartbeat.retries,
            backoff_seconds=heartbeat.backoff_seconds,
            transport=_StopGuard(bounded_transport(Deadline(delivery))),
            sleep=interrupt.sleep,
            budget_seconds=delivery,
        ) as client:
            client.ping(url, label=result.check)
    except interrupt.Stopped:
        return _stopped(settings, result, "before its heartbeat")
    except Exception as error:  # noqa: BLE001 - any failure to deliver is "not delivered", never a crash
        reason = str(error) if isinstance(error, OutpostError) else f"{type(error).__name__}: {_one_line(error)}"
        cause = f"{result.check}: observed {result.status.value} but the heartbeat was not delivered: {reason}"
        return Result(
            check=result.check,
            status=Status.ERROR,
            summary=" ".join(cause.split()),
            errors=[cause],
            next_steps=[_next(settings, result.check, runbook.NOT_DELIVERED)],
            details={**result.details, "observed_status": result.status.value},
        )
    return result.model_copy(update={"reported": True})
