"""kwok-pod-reconciler: the status it writes against the status kwok wrote, and its fetch through the real
`ClusterWriter` against a small in-memory API enforcing what the real one does for this job (field selectors,
metadata-only lists, merge patches of pods/status with a resourceVersion precondition, dryRun, 404, and the pod
IP validation of k8s.io/kubernetes@v1.37.2 `pkg/apis/core/validation/validation.go`: 422).

Real JSON throughout: Running pods whose status kwok v0.8.0 wrote, a Pending pod from the sandbox's dry-run
create, binding as `pkg/registry/core/pod/storage/storage.go` does it; init containers and dual-stack addresses,
never captured, are built from k8s.io/api@v0.37.2 `core/v1/types.go`.
"""

from __future__ import annotations

import copy
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from kit import NOW
from kit.node_fixtures import document
from outpost.checks import kwok_pod_reconciler
from outpost.checks.kwok_pod_reconciler import (
    KwokPodReconcilerParams,
    ReconcileData,
    Skipped,
    kwok_host_ips,
    ready_status,
)
from outpost.cluster import Cluster, ClusterWriter, Deadline
from outpost.errors import ClusterError
from outpost.kube import Node, parse_time
from outpost.kube.timestamps import format_time
from outpost.result import Status

STAMP = format_time(NOW)
"""NOW as the API server keeps a time the reconciler writes (seconds)."""
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox" / "workload-checks"
CREATED_POD = Path(__file__).resolve().parent / "fixtures" / "webhooks" / "healthy" / "dry_run.openkruise.body"
PARAMS = KwokPodReconcilerParams(min_pending_seconds=0)
LONG_AGO = (datetime.now(UTC) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
READY_TYPES = ["Initialized", "Ready", "ContainersReady"]


def captured_nodes() -> list[dict[str, Any]]:
    """The sandbox's five fake nodes, whole (InternalIP 10.245.0.N+1)."""
    return copy.deepcopy(document("healthy", "nodes"))


def nodes() -> list[dict[str, Any]]:
    """The captured fake nodes, plus one real node (no kwok annotation)."""
    captured = captured_nodes()
    real = copy.deepcopy(captured[0])
    real["metadata"]["name"] = "real-0"
    real["metadata"]["annotations"] = {"node.alpha.kubernetes.io/ttl": "0"}
    real["metadata"]["labels"].pop("type")
    real["status"]["addresses"] = [{"address": "192.0.2.10", "type": "InternalIP"}]
    return [*captured, real]


def kwok_made(source: str, name: str) -> dict[str, Any]:
    """A Running pod as captured: its status is what kwok's pod-ready stage wrote."""
    items = (
        json.loads((FIXTURES / source).read_text())["items"]
        if source.endswith(".json")
        else document("healthy", source)
    )
    return copy.deepcopy(next(p for p in items if p["metadata"]["name"] == name))


def pending_before(running: dict[str, Any], since: str) -> dict[str, Any]:
    """The Pending, bound pod kwok found: `running`'s metadata and spec, the status a created pod has (as the
    API server answered a create) and the PodScheduled condition binding adds."""
    created_status = json.loads(CREATED_POD.read_text())["status"]
    pod = {key: copy.deepcopy(running[key]) for key in ("metadata", "spec")}
    pod["metadata"]["resourceVersion"] = "100"
    pod["status"] = {
        **created_status,
        "qosClass": running["status"]["qosClass"],
        "conditions": [{"lastProbeTime": None, "lastTransitionTime": since, "status": "True", "type": "PodScheduled"}],
    }
    return pod


def created_pod(
    name: str = "a", node: str = "kwok-node-0", namespace: str = "default", since: str = LONG_AGO, **spec: Any
) -> dict[str, Any]:
    """The pod the API server answered a create with (readiness gate included), bound to `node` ("" unbound)."""
    pod: dict[str, Any] = json.loads(CREATED_POD.read_text())
    pod["metadata"] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "resourceVersion": "100",
        "creationTimestamp": since,
        "labels": pod["metadata"]["labels"],
    }
    pod["spec"] |= spec
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"]["conditions"] = [
            {"lastProbeTime": None, "lastTransitionTime": since, "status": "True", "type": "PodScheduled"}
        ]
    return pod


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386, as the API server applies application/merge-patch+json."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def as_served(status: dict[str, Any]) -> dict[str, Any]:
    """`status` as the API server serves it: Go's encoding of PodCondition and ContainerStatus writes
    `lastProbeTime` (null), `imageID` and `lastState` even when nobody set them."""
    served = copy.deepcopy(status)
    for condition in served.get("conditions") or []:
        condition.setdefault("lastProbeTime", None)
    for key in ("containerStatuses", "initContainerStatuses"):
        for container in served.get(key) or []:
            container.setdefault("imageID", "")
            container.setdefault("lastState", {})
    return served


def status_errors(status: dict[str, Any]) -> list[str]:
    """What ValidatePodStatusUpdate refuses of the IP fields (validatePodIPs, validateHostIPs)."""
    errors = []
    if status.get("hostIPs") and status.get("hostIP") != status["hostIPs"][0]["ip"]:
        errors.append("status.hostIPs[0].ip: must be equal to `hostIP`")
    if bool(status.get("podIP")) != bool(status.get("podIPs")):
        errors.append("status.podIPs: podIP and podIPs must either both be set or both be unset")
    elif status.get("podIPs") and status["podIP"] != status["podIPs"][0]["ip"]:
        errors.append("status.podIPs[0].ip: must be equal to `podIP`")
    return errors


@dataclass
class WriteApi:
    """Just enough of the API server for the job, enforcing its preconditions."""

    nodes: list[dict[str, Any]]
    pods: dict[tuple[str, str], dict[str, Any]]
    requests: list[httpx.Request] = field(default_factory=list)
    refuse_patch: int | None = None
    answer_with: Callable[[dict[str, Any]], None] | None = None
    """Changes the object answered (not the one stored): a server that does not do what was asked."""

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        parts = request.url.path.strip("/").split("/")
        params = request.url.params
        if request.method == "GET" and request.url.path == "/api/v1/nodes":
            selector = params.get("labelSelector")
            chosen = [
                n
                for n in self.nodes
                if not selector or n["metadata"]["labels"].get(selector.split("=")[0]) == selector.split("=")[1]
            ]
            if "PartialObjectMetadataList" in request.headers["accept"]:
                items = [{"kind": "PartialObjectMetadata", "metadata": n["metadata"]} for n in chosen]
                return httpx.Response(200, json={"kind": "PartialObjectMetadataList", "metadata": {}, "items": items})
            return httpx.Response(200, json={"kind": "NodeList", "metadata": {}, "items": chosen})
        if request.method == "GET" and parts[-1] == "pods":
            assert params.get("fieldSelector") == "status.phase=Pending"
            namespace = parts[3] if len(parts) == 5 else None
            items = [
                p
                for (ns, _), p in sorted(self.pods.items())
                if p["status"]["phase"] == "Pending" and namespace in (None, ns)
            ]
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
            if patch["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
                return httpx.Response(409, json={"kind": "Status", "message": "the object has been modified"})
            updated = copy.deepcopy(current)
            updated["status"] = as_served(merge_patch(current["status"], patch["status"]))
            if errors := status_errors(updated["status"]):
                return httpx.Response(422, json={"kind": "Status", "message": "; ".join(errors)})
            if params.get("dryRun") != "All":
                updated["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
                self.pods[key] = updated
            answered = copy.deepcopy(updated)
            if self.answer_with:
                self.answer_with(answered)
            return httpx.Response(200, json=answered)
        return httpx.Response(405, json={"kind": "Status", "message": f"not served: {request.method}"})

    def writes(self) -> list[str]:
        return [r.url.path for r in self.requests if r.method != "GET"]


def api_with(*pods: dict[str, Any], node_list: list[dict[str, Any]] | None = None) -> WriteApi:
    return WriteApi(
        nodes() if node_list is None else node_list,
        {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods},
    )


def run(api: WriteApi, params: KwokPodReconcilerParams = PARAMS) -> Any:
    writer = ClusterWriter(
        "fake",
        "https://fake.invalid",
        verify=ssl.create_default_context(),
        transport=httpx.MockTransport(api.handler),
        deadline=Deadline(10),
    )
    with writer:
        data = kwok_pod_reconciler.fetch(writer, params)
    return kwok_pod_reconciler.evaluate(data, params, NOW)


def condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), None)


def host_ips_of(name: str) -> list[str]:
    node = next(n for n in captured_nodes() if n["metadata"]["name"] == name)
    return kwok_host_ips(Node.model_validate(node))


# -- the status written is the status kwok writes -------------------------------------------------------------

KWOK_MADE = [
    ("pods.be.healthy.json", "be-batch-7c6bdd4c6f-llkc2"),  # not hostNetwork: kwok gave it a pool IP
    ("pods.be.healthy.json", "be-batch-7c6bdd4c6f-lnflx"),
    ("koordlet_pods", "koordlet-96j52"),  # hostNetwork: kwok gave it the host IP
    ("koordlet_pods", "koordlet-tmgzv"),
    ("kruise_daemon_pods", "kruise-daemon-5l5b9"),
]


@pytest.mark.parametrize(("source", "name"), KWOK_MADE)
def test_status_is_the_one_kwok_wrote(source: str, name: str) -> None:
    running = kwok_made(source, name)
    scheduled = condition(running["status"], "PodScheduled")
    now = parse_time(running["status"]["startTime"])  # kwok's Now when it wrote the status
    assert scheduled is not None
    assert now is not None
    pending = pending_before(running, since=scheduled["lastTransitionTime"])
    patch = ready_status(pending, host_ips_of(running["spec"]["nodeName"]), now)
    written = as_served(merge_patch(pending["status"], patch))
    expected = running["status"]
    if not running["spec"].get("hostNetwork"):
        # kwok's --cidr pool is kwok's own: the job leaves podIP unset rather than collide with it
        del expected["podIP"], expected["podIPs"]
    assert written == expected
    assert status_errors(written) == []


@pytest.mark.parametrize(
    ("conditions", "gates", "expected"),
    [
        pytest.param([], [], READY_TYPES, id="created, never bound"),
        pytest.param(
            [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "T0"}],
            [],
            [*READY_TYPES, "PodScheduled"],
            id="bound: stage conditions first, as kwok's merge puts them",
        ),
        pytest.param(
            [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "T0"}],
            [{"conditionType": "KruisePodReady"}],
            [*READY_TYPES, "KruisePodReady", "PodScheduled"],
            id="a readiness gate gets its own True condition",
        ),
        pytest.param(
            [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "T0"},
                {"type": "Ready", "status": "False", "lastTransitionTime": "T0", "reason": "ContainersNotReady"},
            ],
            [],
            ["Initialized", "PodScheduled", "Ready", "ContainersReady"],
            id="a condition the pod had keeps its place after the pod's earlier ones",
        ),
    ],
)
def test_conditions_merge_by_type_as_kwok_patch_merges(
    conditions: list[dict[str, Any]], gates: list[dict[str, str]], expected: list[str]
) -> None:
    pod = created_pod(node="")
    pod["status"]["conditions"] = conditions
    pod["spec"]["readinessGates"] = gates
    status = ready_status(pod, ["10.245.0.1"], NOW)
    assert [c["type"] for c in status["conditions"]] == expected
    for kind in (*READY_TYPES, *(g["conditionType"] for g in gates)):
        had = condition({"conditions": conditions}, kind) or {}
        # what the stage sets is replaced; what it does not set (a reason) stays, as in a strategic merge
        assert condition(status, kind) == had | {
            "lastTransitionTime": STAMP,
            "status": "True",
            "type": kind,
        }
    assert condition(status, "PodScheduled") == condition({"conditions": conditions}, "PodScheduled")


@pytest.mark.parametrize(
    ("init_containers", "expected"),
    [
        pytest.param([], None, id="none: the field is removed, as the template renders it null"),
        pytest.param(
            [{"name": "setup", "image": "busybox:1.36"}],
            [
                {
                    "image": "busybox:1.36",
                    "name": "setup",
                    "ready": True,
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": 0,
                            "finishedAt": STAMP,
                            "reason": "Completed",
                            "startedAt": STAMP,
                        }
                    },
                }
            ],
            id="an init container ran to completion",
        ),
        pytest.param(
            [{"name": "proxy", "image": "envoy:1.31", "restartPolicy": "Always"}],
            [
                {
                    "image": "envoy:1.31",
                    "name": "proxy",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": STAMP}},
                }
            ],
            id="a sidecar (restartPolicy Always) is running",
        ),
    ],
)
def test_container_statuses_as_the_template_builds_them(
    init_containers: list[dict[str, Any]], expected: list[dict[str, Any]] | None
) -> None:
    pod = created_pod(initContainers=init_containers)
    status = ready_status(pod, ["10.245.0.1"], NOW)
    assert status["initContainerStatuses"] == expected
    assert status["containerStatuses"] == [
        {
            "image": "registry.k8s.io/pause:3.10",
            "name": "probe",
            "ready": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": STAMP}},
        }
    ]
    assert (status["phase"], status["startTime"]) == ("Running", STAMP)


@pytest.mark.parametrize(
    ("host_network", "host_ips", "expected"),
    [
        pytest.param(
            False,
            ["10.245.0.1"],
            {"hostIP": "10.245.0.1", "hostIPs": [{"ip": "10.245.0.1"}]},
            id="pod network: host IP only, podIP left to kwok's pool",
        ),
        pytest.param(
            True,
            ["10.245.0.1"],
            {
                "hostIP": "10.245.0.1",
                "hostIPs": [{"ip": "10.245.0.1"}],
                "podIP": "10.245.0.1",
                "podIPs": [{"ip": "10.245.0.1"}],
            },
            id="hostNetwork: the pod's IPs are the host's",
        ),
        pytest.param(
            True,
            ["10.245.0.1", "fd00::1"],
            {
                "hostIP": "10.245.0.1",
                "hostIPs": [{"ip": "10.245.0.1"}, {"ip": "fd00::1"}],
                "podIP": "10.245.0.1",
                "podIPs": [{"ip": "10.245.0.1"}, {"ip": "fd00::1"}],
            },
            id="dual-stack node",
        ),
    ],
)
def test_ips(host_network: bool, host_ips: list[str], expected: dict[str, Any]) -> None:
    status = ready_status(created_pod(hostNetwork=host_network), host_ips, NOW)
    assert {k: v for k, v in status.items() if k in ("hostIP", "hostIPs", "podIP", "podIPs")} == expected
    assert status_errors(status) == []


def internal(address: str) -> dict[str, str]:
    """A node's status.addresses entry of type InternalIP."""
    return {"type": "InternalIP", "address": address}


def external(address: str) -> dict[str, str]:
    """A node's status.addresses entry of type ExternalIP."""
    return {"type": "ExternalIP", "address": address}


@pytest.mark.parametrize(
    ("addresses", "expected"),
    [
        pytest.param(None, ["10.245.0.1"], id="captured kwok-node-0"),
        pytest.param([{"type": "Hostname", "address": "n"}], [], id="no IP at all"),
        pytest.param([external("203.0.113.7")], ["203.0.113.7"], id="ExternalIP alone"),
        pytest.param(
            [external("203.0.113.7"), internal("10.0.0.7")],
            ["10.0.0.7"],
            id="InternalIP before ExternalIP, one per family",
        ),
        pytest.param(
            [internal("fd00::7"), internal("10.0.0.7"), internal("10.0.0.8")],
            ["fd00::7", "10.0.0.7"],
            id="dual-stack",
        ),
        pytest.param(
            [internal("10.0.0.7"), external("2001:db8::7")],
            ["10.0.0.7", "2001:db8::7"],
            id="the other family may come from an ExternalIP",
        ),
        pytest.param([internal("010.000.000.007")], ["10.0.0.7"], id="leading zeros read as ParseIPSloppy reads them"),
        pytest.param(
            [internal("::ffff:10.0.0.7"), internal("fd00::7")],
            ["10.0.0.7", "fd00::7"],
            id="IPv4-mapped is IPv4",
        ),
        pytest.param(
            [internal("kwok-node-0"), internal("fe80::1%eth0")],
            [],
            id="not an IP, or with a zone: skipped as Go skips them",
        ),
    ],
)
def test_host_ips_as_kwok_picks_them(addresses: list[dict[str, str]] | None, expected: list[str]) -> None:
    node = captured_nodes()[0]
    if addresses is not None:
        node["status"]["addresses"] = addresses
    assert kwok_host_ips(Node.model_validate(node)) == expected


# -- which pods are moved -----------------------------------------------------------------------------------------


def recent() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ready_already(pod: dict[str, Any]) -> dict[str, Any]:
    pod["status"]["conditions"].append({"type": "Ready", "status": "True", "lastTransitionTime": LONG_AGO})
    return pod


def deleting(pod: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["deletionTimestamp"] = LONG_AGO
    return pod


def running(pod: dict[str, Any]) -> dict[str, Any]:
    pod["status"]["phase"] = "Running"
    return pod


@pytest.mark.parametrize(
    ("make_pod", "left_alone"),
    [  # made at test time: "too recent" is relative to now
        pytest.param(lambda: created_pod(), None, id="bound to a fake node, Pending long enough: moved"),
        pytest.param(lambda: created_pod(node="kwok-node-4", namespace="batch"), None, id="any namespace"),
        pytest.param(lambda: created_pod(node="real-0"), "not_on_fake_nodes", id="on a node kwok does not manage"),
        pytest.param(lambda: created_pod(node="gone-node"), "not_on_fake_nodes", id="on a node that does not exist"),
        pytest.param(lambda: created_pod(node=""), "unbound", id="unbound"),
        pytest.param(lambda: created_pod(since=recent()), "pending_less_than_min", id="too recent: kwok's to move"),
        pytest.param(
            lambda: ready_already(created_pod()), "already_ready", id="Ready already: pod-ready would not match"
        ),
        pytest.param(lambda: deleting(created_pod()), "", id="being deleted: pod-delete's, not counted"),
        pytest.param(lambda: running(created_pod()), "", id="not Pending: not even listed"),
    ],
)
def test_moves_only_what_pod_ready_would(make_pod: Callable[[], dict[str, Any]], left_alone: str | None) -> None:
    pod = make_pod()
    api = api_with(pod)
    result = run(api, KwokPodReconcilerParams(min_pending_seconds=60))
    who = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    expected_counts = {"not_on_fake_nodes": 0, "unbound": 0, "pending_less_than_min": 0, "already_ready": 0}
    if left_alone:
        expected_counts[left_alone] = 1
    assert result.status is Status.OK, result
    assert result.details["left_alone"] == expected_counts
    assert result.details["moved"] == ([who] if left_alone is None else [])
    assert api.writes() == ([f"/api/v1/namespaces/{who.split('/')[0]}/pods/a/status"] if left_alone is None else [])


def test_a_moved_pod_is_ready_as_kwok_leaves_it() -> None:
    api = api_with(created_pod("web"), created_pod("host", node="kwok-node-2", hostNetwork=True))
    result = run(api)
    assert result.status is Status.OK, result
    assert result.summary == "moved 2 Pending pod(s) on fake nodes to Running: default/host, default/web"
    for name, node_ip, pod_ip in (("web", "10.245.0.1", None), ("host", "10.245.0.3", "10.245.0.3")):
        status = api.pods[("default", name)]["status"]
        assert status["phase"] == "Running"
        assert [c["type"] for c in status["conditions"] if c["status"] == "True"] == [
            *READY_TYPES,
            "KruisePodReady",
            "PodScheduled",
        ]
        assert [(c["name"], c["ready"], list(c["state"])) for c in status["containerStatuses"]] == [
            ("probe", True, ["running"])
        ]
        assert (status["hostIP"], status.get("podIP")) == (node_ip, pod_ip)
        assert status["qosClass"] == "Burstable"  # the merge patch leaves what it does not name


@pytest.mark.parametrize(
    ("owner", "pod_ready", "pod_complete"),
    [
        pytest.param("ReplicaSet", False, False, id="kept Running and Ready"),
        pytest.param("Job", False, True, id="a Job's pod is then completed by kwok"),
    ],
)
def test_kwok_stages_after_a_move(owner: str, pod_ready: bool, pod_complete: bool) -> None:
    """What kwok does with a moved pod once it returns, by its stages' selectors
    (`sigs.k8s.io/kwok@v0.8.0, kustomize/stage/pod/fast/*.yaml`)."""
    pod = created_pod()
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": owner, "name": "o", "uid": "u"}]
    api = api_with(pod)
    run(api)
    moved = api.pods[("default", "a")]
    ready = condition(moved["status"], "Ready")
    alive = "deletionTimestamp" not in moved["metadata"]
    assert (alive and moved["status"]["phase"] == "Pending" and (ready or {}).get("status") != "True") is pod_ready
    assert (
        alive
        and moved["status"]["phase"] == "Running"
        and "Job" in [o["kind"] for o in moved["metadata"]["ownerReferences"]]
    ) is pod_complete
    # pod-complete's template reads status.containerStatuses[i] for each spec.containers[i]: it must exist
    assert len(moved["status"]["containerStatuses"]) == len(moved["spec"]["containers"])


def test_node_without_address_is_left_to_kwok() -> None:
    node_list = nodes()
    node_list[1]["status"]["addresses"] = [{"address": "kwok-node-1", "type": "Hostname"}]
    api = api_with(created_pod("a"), created_pod("b", node="kwok-node-1"), node_list=node_list)
    result = run(api)
    assert result.status is Status.DEGRADED
    assert result.details["moved"] == ["default/a"]
    assert result.errors == [
        "pod default/b: node kwok-node-1 reports no InternalIP or ExternalIP: kwok would use "
        "its --node-ip, which this job cannot see (left to kwok)"
    ]
    assert [step.failure for step in result.next_steps] == ["pod-left-alone"]
    assert result.next_steps[0].command == "kubectl -n default get pods --field-selector metadata.name=b -o wide"
    assert api.pods[("default", "b")]["status"]["phase"] == "Pending"


def test_second_run_finds_nothing_to_do() -> None:
    api = api_with(created_pod("a"), created_pod("b"))
    assert run(api).details["moved_count"] == 2
    again = run(api)
    assert again.status is Status.OK
    assert again.details["moved"] == []
    assert again.summary == "moved 0 Pending pod(s) on fake nodes to Running"
    assert len(api.writes()) == 2


def test_dry_run_moves_nothing() -> None:
    api = api_with(created_pod("a"), created_pod("b", node="real-0"))
    result = run(api, KwokPodReconcilerParams(min_pending_seconds=0, dry_run=True))
    assert result.status is Status.OK
    assert result.summary == "would move 1 Pending pod(s) on fake nodes to Running: default/a"
    assert api.pods[("default", "a")]["status"]["phase"] == "Pending"
    assert [r.url.params.get("dryRun") for r in api.requests if r.method == "PATCH"] == ["All"]


def test_bounded_per_run() -> None:
    api = api_with(*[created_pod(f"p{i}") for i in range(5)])
    result = run(api, KwokPodReconcilerParams(min_pending_seconds=0, max_pods=2))
    assert result.status is Status.DEGRADED
    assert result.details["moved"] == ["default/p0", "default/p1"]
    assert result.details["left_for_next_run"] == 3
    assert "3 more pod(s) over max_pods 2, left for the next run" in result.errors
    assert [step.failure for step in result.next_steps] == ["left-for-next-run"]


@pytest.mark.parametrize(
    ("params", "moved", "nodes_query"),
    [
        pytest.param({"namespaces": ["batch"]}, ["batch/b"], None, id="namespaces limit what is listed"),
        pytest.param(
            {"fake_node_source": "label", "fake_node_key": "type", "fake_node_value": "kwok"},
            ["batch/b", "default/a"],
            "type=kwok",
            id="fake nodes by label, selected by the server",
        ),
    ],
)
def test_params_limit_what_is_listed(params: dict[str, Any], moved: list[str], nodes_query: str | None) -> None:
    api = api_with(created_pod("a"), created_pod("b", namespace="batch"), created_pod("c", node="real-0"))
    result = run(api, KwokPodReconcilerParams(min_pending_seconds=0, **params))
    assert result.details["moved"] == moved
    listed = next(r for r in api.requests if r.url.path == "/api/v1/nodes")
    assert listed.url.params.get("labelSelector") == nodes_query
    assert "PartialObjectMetadata" not in listed.headers["accept"]  # addresses are in the node's status


# -- what the API server answers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "why", "failure"),
    [
        pytest.param(404, Status.DEGRADED, "gone before it was patched", "pod-left-alone", id="404"),
        pytest.param(
            409,
            Status.DEGRADED,
            "changed since it was listed (left for the next run)",
            "pod-left-alone",
            id="409",
        ),
        pytest.param(403, Status.ERROR, "patching status to Running failed: ", "write-failed", id="403"),
        pytest.param(422, Status.ERROR, "patching status to Running failed: ", "write-failed", id="422"),
        pytest.param(500, Status.ERROR, "patching status to Running failed: ", "write-failed", id="500"),
    ],
)
def test_refused_writes(code: int, status: Status, why: str, failure: str) -> None:
    api = api_with(created_pod("a"))
    api.refuse_patch = code
    result = run(api)
    assert result.status is status
    assert result.errors[0].startswith(f"pod default/a: {why}")
    assert [step.failure for step in result.next_steps] == [failure]
    assert result.next_steps[0].command == "kubectl -n default get pods --field-selector metadata.name=a -o wide"
    if status is Status.ERROR:
        assert f"HTTP {code}" in result.errors[0]
    assert result.details["moved"] == []


def test_conflict_from_the_server_is_left_for_the_next_run() -> None:
    api = api_with(created_pod("a"))
    original = api.handler

    def racing(request: httpx.Request) -> httpx.Response:
        if request.method == "PATCH":  # kwok moved it between our LIST and our PATCH
            api.pods[("default", "a")]["metadata"]["resourceVersion"] = "101"
        return original(request)

    api.handler = racing  # type: ignore[method-assign]
    result = run(api)
    assert result.status is Status.DEGRADED
    assert result.details["moved"] == []
    assert result.details["skipped"] == [
        {"pod": "default/a", "why": "changed since it was listed (left for the next run)"}
    ]


def drop_conditions(pod: dict[str, Any]) -> None:
    pod["status"].pop("conditions")


def not_ready(pod: dict[str, Any]) -> None:
    condition(pod["status"], "Ready")["status"] = "False"  # type: ignore[index]


def still_pending(pod: dict[str, Any]) -> None:
    pod["status"]["phase"] = "Pending"


def elsewhere(pod: dict[str, Any]) -> None:
    pod["spec"]["nodeName"] = "kwok-node-3"


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        pytest.param(still_pending, "phase Pending, Ready True on node kwok-node-0", id="phase not Running"),
        pytest.param(not_ready, "phase Running, Ready False on node kwok-node-0", id="Ready False"),
        pytest.param(drop_conditions, "phase Running, Ready (none) on node kwok-node-0", id="no Ready condition"),
        pytest.param(elsewhere, "phase Running, Ready True on node kwok-node-3", id="another node"),
    ],
)
def test_the_answer_must_be_a_ready_pod_on_its_node(answer: Callable[[dict[str, Any]], None], said: str) -> None:
    api = api_with(created_pod("a"), created_pod("b"))
    api.answer_with = answer
    result = run(api)
    assert result.status is Status.ERROR
    assert result.errors == [f"pod default/a: the API server answered {said} (want Running, Ready True on kwok-node-0)"]
    assert [step.failure for step in result.next_steps] == ["write-failed"]
    assert result.details["moved"] == []
    assert len(api.writes()) == 1  # the run stopped at the first doubt


def test_conflict_and_gone_are_skipped_not_failed() -> None:
    data = ReconcileData(
        fake_nodes=3,
        pending_seen=2,
        dry_run=False,
        moved=["default/a"],
        skipped=[Skipped("default/b", "changed since it was listed (left for the next run)")],
    )
    result = kwok_pod_reconciler.evaluate(data, PARAMS, NOW)
    assert result.status is Status.DEGRADED
    assert result.errors == ["pod default/b: changed since it was listed (left for the next run)"]


def test_no_fake_node_is_error() -> None:
    api = api_with(node_list=[n for n in nodes() if n["metadata"]["name"] == "real-0"])
    result = run(api)
    assert result.status is Status.ERROR
    assert "no node selected by annotation kwok.x-k8s.io/node=fake" in result.summary
    assert [step.failure for step in result.next_steps] == ["no-fake-nodes"]


def test_read_only_client_is_refused() -> None:
    cluster = Cluster(
        "fake",
        "https://fake.invalid",
        verify=ssl.create_default_context(),
        transport=httpx.MockTransport(lambda r: httpx.Response(500)),
    )
    with cluster, pytest.raises(ClusterError, match="needs a write client"):
        kwok_pod_reconciler.fetch(cluster, PARAMS)


def test_reconciler_rbac_is_exactly_what_the_job_does() -> None:
    from outpost.tooling import rbac

    role, binding = rbac.reconciler_manifests()
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},  # it lists nodes, never GETs one
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
    ]
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "outpost-reconciler"}
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"] == "outpost-reconciler"
