"""be-eviction-rate over eviction Events captured from the sandbox (healthy and `be-evictions`), read as
core/v1 and as events.k8s.io/v1, with the pods they name present, gone, or not BE; plus aggregated
Events, old Events, undated ones and clock skew."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kit import FakeApiServer, fake_cluster
from kit.results import failures
from outpost.checks import be_eviction_rate
from outpost.checks.be_eviction_rate import BeEvictionData, BeEvictionRateParams, PodQos, koordlet_reason
from outpost.kube import Event, core_event_shape, parse_items
from outpost.result import Status

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox" / "workload-checks"
NOW = datetime(2026, 12, 3, 13, 35, 20, tzinfo=UTC)
PARAMS = BeEvictionRateParams()


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CAPTURED / name).read_text())
    return data


def evictions() -> list[dict[str, Any]]:
    return list(load("events.evict.be-evictions.json")["items"])


def be_pods() -> dict[tuple[str, str], PodQos]:
    pods = load("pods.be.be-evictions.json")["items"]
    return {
        (p["metadata"]["namespace"], p["metadata"]["name"]): PodQos(
            p["metadata"]["namespace"], p["metadata"]["name"], "BE"
        )
        for p in pods
    }


def judge(
    raw: list[dict[str, Any]],
    pods: dict[tuple[str, str], PodQos] | None = None,
    params: BeEvictionRateParams = PARAMS,
    now: datetime = NOW,
) -> Any:
    events = parse_items(Event, [core_event_shape(e) for e in raw], "test")
    data = BeEvictionData("/api/v1/events", events, be_pods() if pods is None else pods)
    return be_eviction_rate.evaluate(data, params, now)


def event(
    name: str = "e1",
    *,
    reason: str = "evictPodByNodeMemoryUsage",
    pod: str = "be-batch-7c6bdd4c6f-llkc2",
    **fields: Any,
) -> dict[str, Any]:
    raw = copy.deepcopy(evictions()[0])
    raw["metadata"]["name"] = name
    raw["involvedObject"]["name"] = pod
    raw["message"] = f"evict Pod:default/{pod}, reason: {reason}, message: node memory usage too high"
    raw.update(fields)
    return raw


@pytest.mark.parametrize(
    ("raw", "status", "summary"),
    [
        (load("events.evict.healthy.json")["items"], Status.OK, "no BE evictions in the last 30 min"),
        (
            evictions(),
            Status.FAILED,
            "BE pods: observed 10 evictPodSuccess in the last 30 min (want at most 5): cpu 10",
        ),
        (evictions()[:5], Status.DEGRADED, "5 BE eviction(s) in the last 30 min (at most 5 allowed): cpu 5"),
        # An aggregated Event is as many evictions as its count.
        ([event(count=6)], Status.FAILED, "observed 6 evictPodSuccess in the last 30 min (want at most 5): memory 6"),
        # Outside the window: not counted.
        ([event(lastTimestamp="2026-12-03T12:50:00Z")], Status.OK, "no BE evictions"),
        # Clock skew: an Event dated in the future is inside the window.
        ([event(lastTimestamp="2026-12-03T14:00:00Z")], Status.DEGRADED, "1 BE eviction(s)"),
        # The series' last observation wins over an old lastTimestamp (events.k8s.io writers).
        (
            [
                event(
                    lastTimestamp="2026-12-03T10:00:00Z",
                    series={"count": 2, "lastObservedTime": "2026-12-03T13:30:00.000000Z"},
                )
            ],
            Status.DEGRADED,
            "2 BE eviction(s)",
        ),
        # An Event about something other than a pod is not a pod eviction.
        ([event(involvedObject={"kind": "Node", "name": "kwok-node-0"})], Status.OK, "no BE evictions"),
    ],
)
def test_evaluate(raw: list[dict[str, Any]], status: Status, summary: str) -> None:
    result = judge(raw)
    assert result.status is status, result
    assert summary in result.summary
    lines = failures(result)
    if status is Status.FAILED:
        assert lines[0] == "evictions-above-limit"
        assert result.next_steps[0].command == (
            "kubectl get events -A --field-selector reason=evictPodSuccess --sort-by=.lastTimestamp"
        )
    assert set(lines[1:] if status is Status.FAILED else lines) <= {"pod-evicted"}


def test_failure_names_the_pods_and_groups_by_reason() -> None:
    raw = evictions()[:4] + [event(f"m{i}") for i in range(3)]
    result = judge(raw)
    assert result.status is Status.FAILED
    assert result.details["by_reason"] == {"cpu": 4, "memory": 3}
    assert any(
        line.startswith("pod default/be-batch-7c6bdd4c6f-") and "(evictPodByBECPUSatisfaction)" in line
        for line in result.errors
    )
    assert result.details["evictions"] == 7
    assert result.details["events_in_window"] == 7
    assert failures(result) == ["evictions-above-limit"] + ["pod-evicted"] * 7
    pod = result.errors[1].split(":")[0].removeprefix("pod default/")
    assert result.next_steps[1].command == (
        f"kubectl -n default get events --field-selector involvedObject.name={pod},reason=evictPodSuccess -o wide"
    )


def test_other_reasons_are_grouped_as_other() -> None:
    result = judge([event(reason="evictPodByDiskPressure"), event("e2", message="no koordlet message here")])
    assert result.details["by_reason"] == {"other": 2}


def test_pods_that_are_not_best_effort_do_not_count() -> None:
    pods = {("default", "be-batch-7c6bdd4c6f-llkc2"): PodQos("default", "be-batch-7c6bdd4c6f-llkc2", "LS")}
    result = judge([event()], pods=pods)
    assert result.status is Status.OK
    assert result.details["not_best_effort"] == 1


def test_gone_pods_count_unless_told_otherwise() -> None:
    gone = {("default", "be-batch-7c6bdd4c6f-llkc2"): PodQos("default", "be-batch-7c6bdd4c6f-llkc2", None)}
    counted = judge([event()], pods=gone)
    assert counted.status is Status.DEGRADED
    assert counted.details["unresolved_pods"] == 1
    ignored = judge([event()], pods=gone, params=BeEvictionRateParams(count_unresolved_pods=False))
    assert ignored.status is Status.OK


def test_thresholds_are_parameters() -> None:
    assert judge(evictions(), params=BeEvictionRateParams(max_evictions=10)).status is Status.DEGRADED
    assert judge(evictions()[:1], params=BeEvictionRateParams(max_evictions=0)).status is Status.FAILED
    short = BeEvictionRateParams(window_seconds=60)
    assert judge(evictions(), params=short, now=datetime(2026, 12, 3, 13, 37, tzinfo=UTC)).status is Status.OK


def test_window_must_be_shorter_than_the_event_ttl() -> None:
    with pytest.raises(ValidationError, match="shorter than event_ttl_seconds"):
        BeEvictionRateParams(window_seconds=3600)
    assert BeEvictionRateParams(window_seconds=7000, event_ttl_seconds=7200).window_seconds == 7000


def test_events_k8s_io_shape_reads_the_same() -> None:
    core = judge(evictions())
    new = judge(load("events2.evict.be-evictions.json")["items"])
    assert new.status is core.status is Status.FAILED
    assert new.details["by_reason"] == core.details["by_reason"]
    assert sorted(new.errors) == sorted(core.errors)


def test_koordlet_reason() -> None:
    assert (
        koordlet_reason("evict Pod:ns/p-1, reason: evictPodByBECPUSatisfaction, message: x")
        == "evictPodByBECPUSatisfaction"
    )
    assert koordlet_reason("something else") == ""


@pytest.mark.parametrize("api", ["core/v1", "events.k8s.io/v1"])
def test_fetch_filters_by_reason_and_looks_up_pods(api: str) -> None:
    fake = FakeApiServer()
    fake.add(*[{**e, "kind": "Event", "apiVersion": "v1"} for e in evictions()])
    fake.add(*[{**e, "kind": "Event", "apiVersion": "v1", "reason": "Scheduled"} for e in [event("noise")]])
    fake.add(*[{**p, "kind": "Pod", "apiVersion": "v1"} for p in load("pods.be.be-evictions.json")["items"][:1]])
    params = BeEvictionRateParams.model_validate({"api": api})
    if api != "core/v1":
        # The fake serves core/v1 only: answer the events.k8s.io path with the captured events.k8s.io LIST.
        fake.respond("/apis/events.k8s.io/v1/events", 200, load("events2.evict.be-evictions.json"))
    with fake_cluster(fake) as cluster:
        data = be_eviction_rate.fetch(cluster, params)
    assert len(data.events) == 10
    if api == "core/v1":
        listed = next(r for r in fake.requests if r.path == "/api/v1/events")
        assert listed.param("fieldSelector") == "reason=evictPodSuccess"
    present, gone = sorted(data.pods.values(), key=lambda p: p.qos is None)
    assert present.qos == "BE"
    assert gone.qos is None
    assert be_eviction_rate.evaluate(data, params, NOW).status is Status.FAILED


def test_fetch_bounds_pod_lookups() -> None:
    fake = FakeApiServer().add(*[{**e, "kind": "Event", "apiVersion": "v1"} for e in evictions()])
    with fake_cluster(fake) as cluster:
        data = be_eviction_rate.fetch(cluster, BeEvictionRateParams(max_pod_lookups=1))
    assert len(data.pods) == 1
    assert data.lookups_skipped == 1
    assert be_eviction_rate.evaluate(data, PARAMS, NOW).details["pod_lookups_skipped"] == 1


def test_core_event_shape_maps_events_k8s_io_names() -> None:
    new = load("events2.evict.be-evictions.json")["items"][0]
    shaped = core_event_shape(new)
    assert shaped["involvedObject"] == new["regarding"]
    assert shaped["message"] == new["note"]
    assert shaped["lastTimestamp"] == new["deprecatedLastTimestamp"]
    assert shaped["count"] == new["deprecatedCount"]
    assert "regarding" not in shaped
    assert "note" not in shaped
    core = evictions()[0]
    assert core_event_shape(core) == core  # a core/v1 Event passes through unchanged


def test_evictions_past_the_tenth_are_counted_in_one_line_with_its_step() -> None:
    params = BeEvictionRateParams(namespace="default")
    result = judge([event(f"e{i:02d}") for i in range(12)], params=params)
    assert result.errors[-1] == "... and 2 more eviction Events"
    assert failures(result) == ["evictions-above-limit"] + ["pod-evicted"] * 10 + ["more-evictions"]
    assert result.next_steps[-1].command == (
        "kubectl get events -n default --field-selector reason=evictPodSuccess --sort-by=.lastTimestamp"
    )
