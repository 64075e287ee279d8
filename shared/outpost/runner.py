"""Running one check: deadline, observation, judgement, heartbeat, one log line.

Guarantees (docs/contracts.md "Result contract", "Heartbeat contract"):
- `run_check` never raises for anything about the cluster, the credentials or the check itself:
  every exception becomes an `error` result whose summary names the cause in one line;
- the whole run is bounded by the cluster's `deadline_seconds`, even where a library call ignores
  its own timeouts (fetch runs in a worker thread that is abandoned when the deadline passes);
- a heartbeat is sent only for ok/degraded, and only when a heartbeat is configured and reporting
  is on; a ping that cannot be delivered turns the run into `error` (the platform must see it);
- no secret reaches the result: heartbeat URLs are resolved here and handed to the reporter only.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from outpost import registry
from outpost.checks.base import CheckSpec
from outpost.cluster import Cluster, Deadline
from outpost.config import Settings
from outpost.errors import OutpostError
from outpost.heartbeat import HeartbeatClient
from outpost.logs import emit_run_log
from outpost.result import Result, Status
from outpost.secrets import resolve
from outpost.settings import check_params

DEADLINE_GRACE_SECONDS = 2.0
"""Extra time for the worker to return after the last request's own timeout fired."""

ClusterFactory = Callable[[Settings, Deadline], Cluster]


def _default_cluster(settings: Settings, deadline: Deadline) -> Cluster:
    return Cluster.from_settings(settings.cluster, deadline)


def run_check(
    settings: Settings,
    name: str,
    *,
    report: bool = True,
    log: bool = True,
    cluster_factory: ClusterFactory = _default_cluster,
) -> Result:
    started = time.monotonic()
    result = _observe(settings, name, cluster_factory)
    if report and result.status.healthy:
        result = _report(settings, result)
    result = result.model_copy(update={"duration_ms": int((time.monotonic() - started) * 1000)})
    if log:
        emit_run_log(result, environment=settings.environment)
    return result


def _observe(settings: Settings, name: str, cluster_factory: ClusterFactory) -> Result:
    try:
        spec = registry.get(name)
        params = check_params(settings, name)
    except KeyError as error:
        return Result.error(name, str(error.args[0]))
    except OutpostError as error:
        return Result.error(name, str(error))
    deadline = Deadline(settings.cluster.deadline_seconds)
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"outpost-{name}")
    future = executor.submit(_fetch_and_evaluate, spec, params, settings, deadline, cluster_factory)
    try:
        return future.result(timeout=settings.cluster.deadline_seconds + DEADLINE_GRACE_SECONDS)
    except concurrent.futures.TimeoutError:
        return Result.error(
            name,
            f"{name}: no answer within the deadline of {settings.cluster.deadline_seconds:g} s "
            f"on cluster {settings.cluster.name}",
        )
    finally:
        executor.shutdown(wait=False, cancel_futures=True)


def _fetch_and_evaluate(spec: CheckSpec[Any, Any], params: Any, settings: Settings, deadline: Deadline,
                        cluster_factory: ClusterFactory) -> Result:
    try:
        with cluster_factory(settings, deadline) as cluster:
            data = spec.fetch(cluster, params)
        return spec.evaluate(data, params, datetime.now(UTC))
    except OutpostError as error:
        return Result.error(spec.name, str(error))
    except Exception as error:  # noqa: BLE001 - fail closed: a bug in a check is still "could not observe"
        return Result.error(spec.name, f"{spec.name}: internal error {type(error).__name__}: {error}")


def _report(settings: Settings, result: Result) -> Result:
    configured = settings.checks.get(result.check)
    if configured is None or configured.heartbeat is None:
        return result.model_copy(update={"details": {**result.details, "heartbeat": "not configured"}})
    heartbeat = settings.heartbeat
    try:
        with HeartbeatClient(
            timeout_seconds=heartbeat.timeout_seconds,
            retries=heartbeat.retries,
            backoff_seconds=heartbeat.backoff_seconds,
        ) as client:
            client.ping(resolve(configured.heartbeat), label=result.check)
    except OutpostError as error:
        cause = f"{result.check}: observed {result.status.value} but the heartbeat was not delivered: {error}"
        return Result(check=result.check, status=Status.ERROR, summary=cause, errors=[cause],
                      details={**result.details, "observed_status": result.status.value})
    return result.model_copy(update={"reported": True})
