"""Typed views: omitted zero fields are zero, wrong types are MalformedResponse naming object and field."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from outpost.errors import MalformedResponse
from outpost.kube.objects import (
    DaemonSet,
    Deployment,
    Endpoints,
    EndpointSlice,
    Event,
    Lease,
    Node,
    NodeMetric,
    Pod,
    PodGroup,
    WebhookConfiguration,
    parse,
    parse_list,
)

NOW = datetime(2026, 12, 3, 11, 0, 0, tzinfo=UTC)
KOORDLET_META = {"name": "koordlet", "namespace": "koordinator-system", "generation": 2}


def test_daemonset_with_zero_fields_omitted() -> None:
    # What the API server sends when no koordlet pod is available: the zero counts are simply absent.
    raw = {
        "metadata": KOORDLET_META,
        "status": {
            "desiredNumberScheduled": 5,
            "currentNumberScheduled": 5,
            "numberUnavailable": 5,
            "observedGeneration": 2,
        },
    }
    ds = parse(DaemonSet, raw, "GET /apis/apps/v1/...")
    assert (ds.status.number_available, ds.status.number_ready, ds.status.number_misscheduled) == (0, 0, 0)
    assert ds.status.desired_number_scheduled == 5
    assert ds.observed_current
    assert ds.ref == "daemonset koordinator-system/koordlet"


def test_daemonset_not_observed_yet() -> None:
    ds = parse(DaemonSet, {"metadata": {**KOORDLET_META, "generation": 3}, "status": {"observedGeneration": 2}}, "t")
    assert not ds.observed_current


def test_empty_object_is_all_zero() -> None:
    ds = parse(DaemonSet, {}, "t")
    assert ds.name == ""
    assert ds.status.desired_number_scheduled == 0
    assert ds.spec.selector.selector.empty


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"metadata": KOORDLET_META, "status": {"numberReady": "x"}}, "status.numberReady"),
        ({"metadata": KOORDLET_META, "status": []}, "status"),
        ({"metadata": KOORDLET_META, "status": {"conditions": [{"status": "True"}]}}, "status.conditions.0.type"),
        (
            {"metadata": {"name": "koordlet", "namespace": "koordinator-system", "labels": {"a": 1}}},
            "metadata.labels.a",
        ),
    ],
)
def test_wrong_types_are_malformed_not_zero(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(MalformedResponse, match=f"daemonset koordinator-system/koordlet: field {field}:"):
        parse(DaemonSet, raw, "GET /apis/apps/v1/namespaces/koordinator-system/daemonsets/koordlet")


def test_non_object_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match="where: pod: expected a JSON object, got list"):
        parse(Pod, [], "where")
    with pytest.raises(MalformedResponse, match="expected a list of items"):
        parse_list(Pod, {"items": None}, "LIST pods")


def test_deployment_defaults_replicas_to_one() -> None:
    dep = parse(Deployment, {"metadata": {"name": "koord-manager", "namespace": "koordinator-system"}}, "t")
    assert dep.spec.replicas == 1
    assert dep.status.ready_replicas == 0
    assert not dep.available
    scaled = parse(Deployment, {"spec": {"replicas": 0}}, "t")
    assert scaled.spec.replicas == 0


def test_deployment_available() -> None:
    dep = parse(
        Deployment,
        {
            "metadata": {"generation": 1},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"koord-app": "koord-manager"}}},
            "status": {
                "observedGeneration": 1,
                "readyReplicas": 2,
                "availableReplicas": 2,
                "conditions": [{"type": "Available", "status": "True"}],
            },
        },
        "t",
    )
    assert dep.available
    assert dep.observed_current
    assert dep.spec.selector.selector.matches({"koord-app": "koord-manager"})


@pytest.mark.parametrize(
    ("status", "phase", "ready"),
    [
        ({}, "", False),
        ({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}, "Running", True),
        ({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}, "Running", False),
        ({"phase": "Hibernating"}, "Hibernating", False),  # unknown phases are kept, not refused
    ],
)
def test_pod(status: dict[str, Any], phase: str, ready: bool) -> None:
    pod = parse(
        Pod,
        {
            "metadata": {"name": "koordlet-x", "namespace": "koordinator-system"},
            "spec": {"nodeName": "kwok-node-0"},
            "status": {**status, "podIP": "10.0.0.5"},
        },
        "t",
    )
    assert pod.status.phase == phase
    assert pod.ready is ready
    assert pod.node_name == "kwok-node-0"
    assert pod.status.pod_ip == "10.0.0.5"
    assert not pod.terminating


def test_node() -> None:
    node = parse(
        Node,
        {
            "metadata": {"name": "n1"},
            "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            },
        },
        "t",
    )
    assert node.ready
    assert not node.spec.unschedulable
    assert node.address() == "10.0.0.1"
    assert node.address("Hostname") == ""
    assert str(node.spec.taints[0]) == "node.kubernetes.io/not-ready:NoSchedule"
    assert node.ref == "node n1"


@pytest.mark.parametrize(
    ("spec", "age", "expired"),
    [
        ({"leaseDurationSeconds": 40, "renewTime": "2026-12-03T10:59:30.000000Z"}, 30.0, False),
        ({"leaseDurationSeconds": 40, "renewTime": "2026-12-03T10:59:00.000000Z"}, 60.0, True),
        ({"leaseDurationSeconds": 40, "renewTime": "2026-12-03T11:00:10.000000Z"}, -10.0, False),  # skew
        ({"leaseDurationSeconds": 40}, None, True),  # never renewed
        ({"renewTime": "2026-12-03T10:59:59.000000Z"}, 1.0, True),  # no duration: cannot be current
    ],
)
def test_lease(spec: dict[str, Any], age: float | None, expired: bool) -> None:
    lease = parse(Lease, {"metadata": {"name": "kwok-node-0", "namespace": "kube-node-lease"}, "spec": spec}, "t")
    assert lease.age_seconds(NOW) == age
    assert lease.expired(NOW) is expired


def test_lease_slack() -> None:
    lease = parse(Lease, {"spec": {"leaseDurationSeconds": 15, "renewTime": "2026-12-03T10:59:40Z"}}, "t")
    assert lease.expired(NOW)
    assert not lease.expired(NOW, slack=5)
    assert lease.renewed_within(NOW, 20)
    assert not lease.renewed_within(NOW, 19)


def test_endpoints() -> None:
    ep = parse(
        Endpoints,
        {
            "metadata": {"name": "kruise-webhook-service", "namespace": "kruise-system"},
            "subsets": [
                {
                    "addresses": [{"ip": "10.1.0.2", "targetRef": {"kind": "Pod", "name": "p"}}],
                    "notReadyAddresses": [{"ip": "10.1.0.3"}],
                    "ports": [{"port": 9876, "protocol": "TCP"}],
                }
            ],
        },
        "t",
    )
    assert ep.ready_count == 1
    assert [a.ip for a in ep.not_ready_addresses] == ["10.1.0.3"]
    assert ep.ready_addresses[0].target_ref is not None
    assert ep.ready_addresses[0].target_ref.name == "p"
    assert parse(Endpoints, {}, "t").ready_count == 0  # no subsets: no endpoints


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [({}, True), ({"ready": True}, True), ({"ready": False}, False), ({"ready": None, "terminating": True}, True)],
)
def test_endpoint_slice_nil_ready_means_ready(conditions: dict[str, Any], ready: bool) -> None:
    # discovery.k8s.io/v1 EndpointConditions.ready: "a nil value indicates an unknown state. In most
    # cases consumers should interpret this unknown state as ready."
    eps = parse(
        EndpointSlice,
        {
            "metadata": {"labels": {"kubernetes.io/service-name": "svc"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.1.0.2"], "conditions": conditions}],
        },
        "t",
    )
    assert eps.endpoints[0].ready is ready
    assert len(eps.ready_endpoints) == int(ready)
    assert eps.service_name == "svc"


def test_endpoint_slice_of_a_service_without_backends_is_empty() -> None:
    # Captured from the sandbox with koord-manager scaled to 0: the API server writes the nil slices as null.
    captured = {
        "metadata": {"labels": {"kubernetes.io/service-name": "koordinator-webhook-service"}},
        "addressType": "IPv4",
        "endpoints": None,
        "ports": None,
    }
    eps = parse(EndpointSlice, captured, "t")
    assert (eps.endpoints, eps.ports, eps.ready_endpoints) == ([], [], [])


def test_webhook_configuration_defaults() -> None:
    raw = {
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "kruise-validating-webhook-configuration"},
        "webhooks": [
            {
                "name": "vpod.kb.io",
                "clientConfig": {"service": {"namespace": "kruise-system", "name": "kruise-webhook-service"}},
            },
            {"name": "external", "clientConfig": {"url": "https://example.invalid/x"}, "failurePolicy": "Ignore"},
        ],
    }
    config = parse(WebhookConfiguration, raw, "t")
    first = config.webhooks[0]
    assert first.client_config.service is not None
    assert first.client_config.service.port == 443
    assert first.failure_policy == "Fail"
    assert first.timeout_seconds == 10
    assert [w.name for w in config.webhooks_for("kruise-system", "kruise-webhook-service")] == ["vpod.kb.io"]
    assert config.ref == "validatingwebhookconfiguration kruise-validating-webhook-configuration"
    assert parse(WebhookConfiguration, {"metadata": {"name": "x"}}, "t").webhooks == []


@pytest.mark.parametrize(
    ("raw", "last_seen", "occurrences"),
    [
        (
            {"lastTimestamp": "2026-12-03T10:50:00Z", "firstTimestamp": "2026-12-03T10:00:00Z", "count": 3},
            "2026-12-03T10:50:00+00:00",
            3,
        ),
        (
            {
                "eventTime": "2026-12-03T10:51:00.123456Z",
                "series": {"count": 7, "lastObservedTime": "2026-12-03T10:58:00.000000Z"},
                "lastTimestamp": None,
            },
            "2026-12-03T10:58:00+00:00",
            7,
        ),
        ({"eventTime": "2026-12-03T10:51:00.000000Z"}, "2026-12-03T10:51:00+00:00", 1),
        ({"metadata": {"creationTimestamp": "2026-12-03T10:52:00Z"}}, "2026-12-03T10:52:00+00:00", 1),
    ],
)
def test_event_last_seen(raw: dict[str, Any], last_seen: str, occurrences: int) -> None:
    event = parse(Event, {"reason": "evictPodSuccess", "type": "Warning", **raw}, "t")
    assert event.last_seen is not None
    assert event.last_seen.isoformat() == last_seen
    assert event.occurrences == occurrences


def test_nodemetric_and_podgroup() -> None:
    nm = parse(
        NodeMetric,
        {
            "metadata": {"name": "kwok-node-0"},
            "status": {
                "updateTime": "2026-12-03T10:55:00Z",
                "nodeMetric": {"nodeUsage": {"resources": {"cpu": "2500m"}}},
            },
        },
        "t",
    )
    assert nm.age_seconds(NOW) == 300.0
    assert nm.node_usage == {"cpu": "2500m"}
    assert parse(NodeMetric, {}, "t").age_seconds(NOW) is None
    assert parse(NodeMetric, {}, "t").node_usage == {}
    pg = parse(
        PodGroup,
        {"metadata": {"name": "gang", "namespace": "default"}, "spec": {"minMember": 3}, "status": {"phase": "Failed"}},
        "t",
    )
    assert pg.status.phase == "Failed"
    assert pg.spec.min_member == 3
    assert pg.status.running == 0


def test_parse_list() -> None:
    pods = parse_list(
        Pod, {"kind": "PodList", "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}, "LIST pods"
    )
    assert [p.name for p in pods] == ["a", "b"]
    assert parse_list(Pod, {"items": []}, "LIST pods") == []


def test_views_are_frozen() -> None:
    pod = parse(Pod, {"metadata": {"name": "a"}}, "t")
    with pytest.raises(ValueError, match="frozen"):
        pod.metadata.name = "b"  # type: ignore[misc]


@pytest.mark.parametrize("renew_time", ["2026-12-04T13:30:14", "2026-12-04T13:30:14.053210"])
def test_a_time_without_a_zone_is_a_malformed_object_naming_the_field(renew_time: str) -> None:
    """The API server always writes UTC with `Z`; a zoneless time cannot be placed on our clock (fail closed)."""
    raw = {"metadata": {"name": "kwok-node-0", "namespace": "kube-node-lease"}, "spec": {"renewTime": renew_time}}
    with pytest.raises(
        MalformedResponse,
        match=r"^kwok-node-consistency: lease kube-node-lease/kwok-node-0: field "
        r"spec\.renewTime: Input should have timezone info",
    ):
        parse(Lease, raw, "kwok-node-consistency")
