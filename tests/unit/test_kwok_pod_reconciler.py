"""kwok-pod-reconciler's fetch (it writes) through the real `ClusterWriter` against a small in-memory API
that enforces what the real one does for this job: `fieldSelector=status.phase`, metadata-only node
lists, merge patches of pods/status with a resourceVersion precondition (409), `dryRun=All` (nothing
persisted), 404 for pods that are gone. Nodes and pods are derived from sandbox captures."""

from __future__ import annotations

import copy
import json
import ssl
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from kit import NOW
from outpost.checks import kwok_pod_reconciler
from outpost.checks.kwok_pod_reconciler import KwokPodReconcilerParams, ReconcileData, Skipped
from outpost.cluster import Cluster, ClusterWriter, Deadline
from outpost.errors import ClusterError
from outpost.result import Status

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox" / "workload-checks"
PARAMS = KwokPodReconcilerParams(min_pending_seconds=0)
LONG_AGO = (datetime.now(UTC) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")


def nodes() -> list[dict[str, Any]]:
    """Three fake nodes as captured, plus one real node (no kwok annotation)."""
    captured: list[dict[str, Any]] = json.loads((CAPTURED / "nodes.meta.json").read_text())["items"]
    real = copy.deepcopy(captured[0])
    real["metadata"]["name"] = "real-0"
    real["metadata"]["annotations"] = {"node.alpha.kubernetes.io/ttl": "0"}
    real["metadata"]["labels"].pop("type")
    return [*captured, real]


def pod(name: str, node: str = "kwok-node-0", phase: str = "Pending", namespace: str = "default",
        since: str = LONG_AGO) -> dict[str, Any]:
    raw: dict[str, Any] = copy.deepcopy(json.loads((CAPTURED / "pods.be.healthy.json").read_text())["items"][0])
    raw["metadata"].update(name=name, namespace=namespace, resourceVersion="100", creationTimestamp=since)
    raw["spec"]["nodeName"] = node
    if not node:
        raw["spec"].pop("nodeName")
    conditions = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": since}] if node else []
    raw["status"] = {"phase": phase, "conditions": conditions}
    return raw


@dataclass
class WriteApi:
    """Just enough of the API server for the job, enforcing its preconditions."""

    nodes: list[dict[str, Any]]
    pods: dict[tuple[str, str], dict[str, Any]]
    requests: list[httpx.Request] = field(default_factory=list)
    refuse_patch: int | None = None

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        parts = request.url.path.strip("/").split("/")
        params = request.url.params
        if request.method == "GET" and request.url.path == "/api/v1/nodes":
            assert "PartialObjectMetadataList" in request.headers["accept"]
            items = [{"kind": "PartialObjectMetadata", "metadata": n["metadata"]} for n in self.nodes]
            return httpx.Response(200, json={"kind": "PartialObjectMetadataList", "metadata": {}, "items": items})
        if request.method == "GET" and parts[-1] == "pods":
            assert params.get("fieldSelector") == "status.phase=Pending"
            namespace = parts[3] if len(parts) == 5 else None
            items = [p for (ns, _), p in sorted(self.pods.items()) if p["status"]["phase"] == "Pending"
                     and namespace in (None, ns)]
            return httpx.Response(200, json={"kind": "PodList", "metadata": {}, "items": items})
        if request.method == "PATCH" and parts[-1] == "status":
            assert request.headers["content-type"] == "application/merge-patch+json"
            if self.refuse_patch:
                return httpx.Response(self.refuse_patch, json={"kind": "Status", "message": "refused"})
            key = (parts[3], parts[5])
            current = self.pods.get(key)
            if current is None:
                return httpx.Response(404, json={"kind": "Status", "message": "not found"})
            patch = json.loads(request.content)
            assert set(patch) == {"metadata", "status"}
            assert set(patch["status"]) == {"phase"}
            if patch["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
                return httpx.Response(409, json={"kind": "Status", "message": "the object has been modified"})
            updated = copy.deepcopy(current)
            updated["status"]["phase"] = patch["status"]["phase"]
            if params.get("dryRun") != "All":
                updated["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
                self.pods[key] = updated
            return httpx.Response(200, json=updated)
        return httpx.Response(405, json={"kind": "Status", "message": f"not served: {request.method}"})

    def writes(self) -> list[str]:
        return [r.url.path for r in self.requests if r.method != "GET"]


def api_with(*pods: dict[str, Any]) -> WriteApi:
    return WriteApi(nodes(), {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods})


def run(api: WriteApi, params: KwokPodReconcilerParams = PARAMS) -> Any:
    writer = ClusterWriter("fake", "https://fake.invalid", verify=ssl.create_default_context(),
                           transport=httpx.MockTransport(api.handler), deadline=Deadline(10))
    with writer:
        data = kwok_pod_reconciler.fetch(writer, params)
    return kwok_pod_reconciler.evaluate(data, params, NOW)


def test_moves_only_pending_pods_bound_to_fake_nodes() -> None:
    api = api_with(pod("on-fake-1"), pod("on-fake-2", node="kwok-node-1"), pod("on-real", node="real-0"),
                   pod("unbound", node=""), pod("running", phase="Running"),
                   pod("elsewhere", node="kwok-node-2", namespace="batch"))
    result = run(api)
    assert result.status is Status.OK, result
    assert result.details["moved"] == ["batch/elsewhere", "default/on-fake-1", "default/on-fake-2"]
    assert result.summary == ("moved 3 Pending pod(s) on fake nodes to Running: batch/elsewhere, "
                              "default/on-fake-1, default/on-fake-2")
    assert result.details["left_alone"] == {"not_on_fake_nodes": 1, "unbound": 1, "pending_less_than_min": 0}
    assert api.pods[("default", "on-real")]["status"]["phase"] == "Pending"
    assert api.pods[("default", "unbound")]["status"]["phase"] == "Pending"
    assert sorted(api.writes()) == ["/api/v1/namespaces/batch/pods/elsewhere/status",
                                    "/api/v1/namespaces/default/pods/on-fake-1/status",
                                    "/api/v1/namespaces/default/pods/on-fake-2/status"]


def test_second_run_finds_nothing_to_do() -> None:
    api = api_with(pod("a"), pod("b"))
    assert run(api).details["moved_count"] == 2
    again = run(api)
    assert again.status is Status.OK
    assert again.details["moved"] == []
    assert again.summary == "moved 0 Pending pod(s) on fake nodes to Running"


def test_dry_run_moves_nothing() -> None:
    api = api_with(pod("a"), pod("b", node="real-0"))
    result = run(api, KwokPodReconcilerParams(min_pending_seconds=0, dry_run=True))
    assert result.status is Status.OK
    assert result.summary == "would move 1 Pending pod(s) on fake nodes to Running: default/a"
    assert api.pods[("default", "a")]["status"]["phase"] == "Pending"
    assert [r.url.params.get("dryRun") for r in api.requests if r.method == "PATCH"] == ["All"]


def test_bounded_per_run() -> None:
    api = api_with(*[pod(f"p{i}") for i in range(5)])
    result = run(api, KwokPodReconcilerParams(min_pending_seconds=0, max_pods=2))
    assert result.status is Status.DEGRADED
    assert result.details["moved"] == ["default/p0", "default/p1"]
    assert result.details["left_for_next_run"] == 3
    assert "3 more pod(s) over max_pods 2, left for the next run" in result.errors


def test_recent_pods_are_left_to_kwok() -> None:
    just_now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    api = api_with(pod("fresh", since=just_now), pod("old"))
    result = run(api, KwokPodReconcilerParams(min_pending_seconds=60))
    assert result.details["moved"] == ["default/old"]
    assert result.details["left_alone"]["pending_less_than_min"] == 1


def test_namespaces_limit_what_is_listed() -> None:
    api = api_with(pod("a"), pod("b", namespace="batch"))
    result = run(api, KwokPodReconcilerParams(min_pending_seconds=0, namespaces=["batch"]))
    assert result.details["moved"] == ["batch/b"]


def test_fake_nodes_by_label() -> None:
    api = api_with(pod("a"), pod("b", node="real-0"))
    params = KwokPodReconcilerParams(min_pending_seconds=0, fake_node_source="label", fake_node_key="type",
                                     fake_node_value="kwok")
    assert run(api, params).details["moved"] == ["default/a"]
    listed = next(r for r in api.requests if r.url.path == "/api/v1/nodes")
    assert listed.url.params.get("labelSelector") == "type=kwok"


def test_refused_write_is_error_naming_the_pod() -> None:
    api = api_with(pod("a"))
    api.refuse_patch = 403
    result = run(api)
    assert result.status is Status.ERROR
    assert result.errors[0].startswith("pod default/a: patching status to Running failed:")
    assert "HTTP 403" in result.errors[0]
    assert result.details["moved"] == []


def test_conflict_and_gone_are_skipped_not_failed() -> None:
    data = ReconcileData(fake_nodes=3, pending_seen=2, dry_run=False, moved=["default/a"],
                         skipped=[Skipped("default/b", "changed since it was listed (left for the next run)")])
    result = kwok_pod_reconciler.evaluate(data, PARAMS, NOW)
    assert result.status is Status.DEGRADED
    assert result.errors == ["pod default/b: changed since it was listed (left for the next run)"]


def test_conflict_from_the_server_is_left_for_the_next_run() -> None:
    api = api_with(pod("a"))
    original = api.handler

    def racing(request: httpx.Request) -> httpx.Response:
        if request.method == "PATCH":  # kwok moved it between our LIST and our PATCH
            api.pods[("default", "a")]["metadata"]["resourceVersion"] = "101"
        return original(request)

    api.handler = racing  # type: ignore[method-assign]
    result = run(api)
    assert result.status is Status.DEGRADED
    assert result.details["moved"] == []
    assert result.details["skipped"] == [{"pod": "default/a",
                                          "why": "changed since it was listed (left for the next run)"}]


def test_no_fake_node_is_error() -> None:
    api = WriteApi([n for n in nodes() if n["metadata"]["name"] == "real-0"], {})
    result = run(api)
    assert result.status is Status.ERROR
    assert "no node selected by annotation kwok.x-k8s.io/node=fake" in result.summary


def test_read_only_client_is_refused() -> None:
    cluster = Cluster("fake", "https://fake.invalid", verify=ssl.create_default_context(),
                      transport=httpx.MockTransport(lambda r: httpx.Response(500)))
    with cluster, pytest.raises(ClusterError, match="needs a write client"):
        kwok_pod_reconciler.fetch(cluster, PARAMS)


def test_reconciler_rbac_is_exactly_what_the_job_does() -> None:
    from outpost import rbac

    role, binding = rbac.reconciler_manifests()
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},  # it lists nodes, never GETs one
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
    ]
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                    "name": "outpost-reconciler"}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"] == "outpost-reconciler"
