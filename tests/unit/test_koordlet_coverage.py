"""koordlet-coverage over captured sandbox output (every node a KWOK fake node whose stand-in koordlet
reports, so fake nodes are opted in as the sandbox's environment does): healthy, the koordlet-missing
fault (the DaemonSet no longer targets the node, so its own counters say "all ready"), and variations
(DaemonSet absent or desiring nothing, pods not ready, node classes, cordoned nodes, many nodes,
nothing selected); over a hand-built real cluster (kubelet nodes plus in-cluster kwok fake nodes),
which the defaults judge by its real nodes only; and fetch through the real Cluster over the fake
API server."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kit import FakeApiServer, fake_cluster
from kit.node_fixtures import captured_at, document, serve
from kit.results import failures
from outpost.checks import koordlet_coverage
from outpost.checks.koordlet_coverage import KoordletCoverageParams
from outpost.errors import MalformedResponse
from outpost.families.daemon_coverage import DaemonCoverageData
from outpost.kube.daemons import daemon_pod_of
from outpost.kube.nodes import NodeClass, NodeSelection, facts_of
from outpost.kube.objects import DaemonSet, parse
from outpost.kube.paths import DAEMON_SETS
from outpost.result import Result, Status

DS = "daemonset koordinator-system/koordlet"
SANDBOX: dict[str, Any] = {"nodes": {"classes": ["real", "fake"]}}  # what the sandbox's environment opts into


def data(
    state: str,
    nodes: list[dict[str, Any]] | None = None,
    pods: list[dict[str, Any]] | None = None,
    ds: dict[str, Any] | str | None = "captured",
) -> DaemonCoverageData:
    raw_ds = document(state, "koordlet_ds") if ds == "captured" else ds
    return DaemonCoverageData(
        parse(DaemonSet, raw_ds, "t") if isinstance(raw_ds, dict) else None,
        tuple(facts_of(n) for n in (nodes if nodes is not None else document(state, "nodes"))),
        tuple(daemon_pod_of(p) for p in (pods if pods is not None else document(state, "koordlet_pods"))),
    )


def run(d: DaemonCoverageData, state: str = "healthy", **params: Any) -> Result:
    return koordlet_coverage.evaluate(d, KoordletCoverageParams(**params), captured_at(state))


def test_healthy_sandbox_is_ok_with_classes_counted_apart() -> None:
    result = run(data("healthy"), **SANDBOX)
    assert result.status is Status.OK, result.errors
    assert result.summary == "koordlet ready on all 5 selected nodes (0 real, 5 fake)"
    assert result.details["coverage_by_class"] == {
        "real": {"selected": 0, "covered": 0, "uncovered": 0},
        "fake": {"selected": 5, "covered": 5, "uncovered": 0},
    }


def test_koordlet_missing_fault_is_caught_although_the_daemonset_says_all_ready() -> None:
    d = data("koordlet-missing")
    assert d.daemonset is not None
    status = d.daemonset.status
    assert status.desired_number_scheduled == status.number_ready == 4  # "4 of 4 ready"
    result = run(d, "koordlet-missing", **SANDBOX)
    assert result.status is Status.FAILED
    assert result.errors == [f"{DS}: node kwok-node-0 has no pod"]
    assert failures(result) == ["node-without-pod"]
    assert result.next_steps[0].command == (
        "kubectl -n koordinator-system get daemonsets --field-selector metadata.name=koordlet -o wide && "
        "kubectl describe node kwok-node-0"
    )
    assert "kwok-node-0" in result.summary
    assert result.details["uncovered_count"] == 1


def test_daemonset_absent_is_failed_and_said() -> None:
    result = run(data("healthy", pods=[], ds=None), **SANDBOX)
    assert result.status is Status.FAILED
    assert result.errors[0] == f"{DS}: absent; want one ready koordlet pod on each of 5 selected nodes"
    assert result.summary.startswith(f"{DS} absent")
    assert failures(result)[0] == "daemonset-absent"
    assert result.next_steps[0].command == "kubectl -n koordinator-system get daemonsets,pods -o wide"
    assert result.details["daemonset_present"] is False


def test_nothing_desired_while_nodes_exist_is_a_failure_not_zero_of_zero() -> None:
    ds = copy.deepcopy(document("healthy", "koordlet_ds"))
    ds["status"] = {"observedGeneration": 1}  # every counter 0, hence omitted
    result = run(data("healthy", pods=[], ds=ds), **SANDBOX)
    assert result.status is Status.FAILED
    assert any("observed desiredNumberScheduled 0 (want 5" in e for e in result.errors)
    assert sum("has no pod" in e for e in result.errors) == 5
    assert failures(result) == ["nothing-desired"] + ["node-without-pod"] * 5
    assert result.next_steps[0].command == "kubectl -n koordinator-system describe daemonset koordlet"


def test_pod_not_ready_or_terminating_is_named_with_its_state() -> None:
    pods = copy.deepcopy(document("healthy", "koordlet_pods"))
    pods[0]["status"]["conditions"] = [
        c | {"status": "False"} if c["type"] == "Ready" else c for c in pods[0]["status"]["conditions"]
    ]
    pods[1]["metadata"]["deletionTimestamp"] = "2026-12-03T13:30:00Z"
    result = run(data("healthy", pods=pods), **SANDBOX)
    assert result.status is Status.FAILED
    nodes = {pods[0]["spec"]["nodeName"], pods[1]["spec"]["nodeName"]}
    assert len(result.errors) == 2
    assert all(any(n in e for n in nodes) and "has no ready pod (pod " in e for e in result.errors)
    assert any("terminating" in e for e in result.errors)
    assert failures(result) == ["pod-not-ready"] * 2
    named = {pods[0]["metadata"]["name"], pods[1]["metadata"]["name"]}
    assert {
        step.command.removeprefix("kubectl -n koordinator-system describe pod ") for step in result.next_steps
    } == named
    assert all(step.see.startswith("kubectl -n koordinator-system logs koordlet-") for step in result.next_steps)


def test_virtual_and_cordoned_nodes_are_not_judged_unless_selected() -> None:
    nodes = copy.deepcopy(document("healthy", "nodes"))
    virtual = copy.deepcopy(nodes[0])
    virtual["metadata"] = {"name": "vk-1", "labels": {"type": "virtual-kubelet"}, "annotations": {}}
    cordoned = copy.deepcopy(nodes[0])
    cordoned["metadata"] = {"name": "real-cordoned", "labels": {}, "annotations": {}}
    cordoned["spec"] = {"unschedulable": True}
    real = {"metadata": {"name": "real-1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    d = data("healthy", nodes=[*nodes, virtual, cordoned, real])
    result = run(d, **SANDBOX)
    assert result.status is Status.FAILED
    assert result.errors == [f"{DS}: node real-1 has no pod"]
    assert result.details["excluded"] == {"class virtual not selected": 1, "cordoned (spec.unschedulable)": 1}
    assert result.details["coverage_by_class"]["real"] == {"selected": 1, "covered": 0, "uncovered": 1}
    only_fake = run(d, nodes=NodeSelection(classes=(NodeClass.FAKE,)))
    assert only_fake.status is Status.OK
    with_virtual = run(d, nodes={"classes": ["virtual"]})
    assert with_virtual.errors == [f"{DS}: node vk-1 has no pod"]


@pytest.mark.parametrize(
    ("nodes", "status", "summary", "by_class"),
    [
        # default: the real nodes; kwok made the koordlet pods on the fake nodes Ready, which proves nothing
        (
            {},
            Status.OK,
            "koordlet ready on all 2 selected nodes (2 real)",
            {"real": {"selected": 2, "covered": 2, "uncovered": 0}},
        ),
        (
            {"nodes": {"classes": ["real", "fake"]}},
            Status.OK,
            "koordlet ready on all 4 selected nodes (2 real, 2 fake)",
            {
                "real": {"selected": 2, "covered": 2, "uncovered": 0},
                "fake": {"selected": 2, "covered": 2, "uncovered": 0},
            },
        ),
    ],
)
def test_real_cluster_is_judged_by_its_real_nodes_by_default(
    nodes: dict[str, Any], status: Status, summary: str, by_class: dict[str, Any]
) -> None:
    result = run(data("real-cluster"), "real-cluster", **nodes)
    assert result.status is status, result.errors
    assert result.summary == summary
    assert result.details["coverage_by_class"] == by_class
    if not nodes:
        assert result.details["excluded"] == {"class fake not selected": 2}


def test_real_node_without_koordlet_is_named_while_fake_nodes_are_left_out() -> None:
    pods = [p for p in document("real-cluster", "koordlet_pods") if p["spec"]["nodeName"] != "node-b"]
    result = run(data("real-cluster", pods=pods), "real-cluster")
    assert result.status is Status.FAILED
    assert result.errors == [f"{DS}: node node-b has no pod"]


def test_first_ten_nodes_named_then_counted() -> None:
    template = document("healthy", "nodes")[0]
    nodes = [copy.deepcopy(template) | {"metadata": {**template["metadata"], "name": f"n{i:02d}"}} for i in range(25)]
    result = run(data("healthy", nodes=nodes, pods=[]), **SANDBOX)
    node_lines = [e for e in result.errors if "has no pod" in e]
    assert len(node_lines) == 10
    assert node_lines[0] == f"{DS}: node n00 has no pod"
    assert result.errors[-1] == f"{DS}: 15 more nodes without a ready pod (25 of 25 in all)"
    assert "(+15 more, 25 in all)" in result.summary
    assert failures(result) == ["node-without-pod"] * 10 + ["many-nodes-uncovered"]
    assert "kubectl -n koordinator-system get pods -l koord-app=koordlet -o wide" in result.next_steps[-1].command
    assert result.details["uncovered_count"] == 25
    assert len(result.details["uncovered"]) == 10


@pytest.mark.parametrize(
    ("state", "params", "summary"),
    [
        # the sandbox's nodes are all fake: with the defaults nothing is selected, and the message says how to opt in
        (
            "healthy",
            {},
            f"{DS}: no node selected (real nodes; 5 nodes read, excluded: 5 class fake not selected); "
            "KWOK fake nodes are left out by default (no agent runs on them); to judge them, set "
            "nodes.classes to [real, fake]",
        ),
        (
            "real-cluster",
            {"nodes": {"classes": ["virtual"]}},
            f"{DS}: no node selected (virtual nodes; 4 nodes read, excluded: 2 class fake not selected, 2 class real "
            "not selected); KWOK fake nodes are left out by default (no agent runs on them); to judge them, set "
            "nodes.classes to [real, fake]",
        ),
        (
            "healthy",
            {"nodes": {"classes": ["real", "fake"], "label_selector": "zone=a"}},
            f"{DS}: no node selected (real and fake nodes with labels zone=a; 5 nodes read, excluded: 5 labels do "
            "not match zone=a)",
        ),
    ],
)
def test_no_node_selected_is_error(state: str, params: dict[str, Any], summary: str) -> None:
    result = run(data(state), state, **params)
    assert result.status is Status.ERROR
    assert result.summary == summary
    assert result.errors == [summary]
    assert failures(result) == ["nothing-selected"]
    assert result.next_steps[0].command == "kubectl get nodes -o wide --show-labels"


def test_no_node_at_all_is_error() -> None:
    assert run(data("healthy", nodes=[]), **SANDBOX).status is Status.ERROR


def test_fetch_reads_pods_by_selector_in_one_namespace_and_pages() -> None:
    api = serve("koordlet-missing")
    api.add(
        {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {"name": "other", "namespace": "default", "labels": {"koord-app": "koordlet"}},
        }
    )
    params = KoordletCoverageParams(**SANDBOX)
    with fake_cluster(api, page_size=2) as cluster:
        fetched = koordlet_coverage.fetch(cluster, params)
    result = koordlet_coverage.evaluate(fetched, params, captured_at("koordlet-missing"))
    assert result.status is Status.FAILED
    assert result.errors == [f"{DS}: node kwok-node-0 has no pod"]
    pod_lists = [r for r in api.requests if r.path.endswith("/pods")]
    assert {r.path for r in pod_lists} == {"/api/v1/namespaces/koordinator-system/pods"}
    assert all(r.param("labelSelector") == "koord-app=koordlet" for r in pod_lists)
    node_pages = [r for r in api.requests if r.path == "/api/v1/nodes"]
    assert len(node_pages) == 3
    assert all(r.param("limit") == "2" for r in node_pages)


def test_fetch_absent_daemonset_and_malformed_node() -> None:
    api = serve("healthy")
    api.remove(DAEMON_SETS, "koordlet", "koordinator-system")
    with fake_cluster(api) as cluster:
        fetched = koordlet_coverage.fetch(cluster, KoordletCoverageParams())
    assert fetched.daemonset is None
    broken = FakeApiServer().add(
        {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1"}, "spec": {"unschedulable": "maybe"}}
    )
    with fake_cluster(broken) as cluster, pytest.raises(MalformedResponse, match=r"field spec\.unschedulable"):
        koordlet_coverage.fetch(cluster, KoordletCoverageParams())


def test_five_thousand_nodes_are_read_page_by_page_and_named_within_bounds() -> None:
    """The scale the node checks are built for: 5,000 nodes, pods read by selector, 500 per page,
    and an alert that still names ten nodes and counts the rest."""
    node_template = document("healthy", "nodes")[0]
    pod_template = document("healthy", "koordlet_pods")[0]
    api = FakeApiServer().add({"kind": "DaemonSet", "apiVersion": "apps/v1", **document("healthy", "koordlet_ds")})
    for i in range(5000):
        name = f"node-{i:04d}"
        api.add(node_template | {"metadata": {**node_template["metadata"], "name": name}})
        if i % 500:  # every 500th node has no koordlet
            api.add(
                pod_template
                | {
                    "metadata": {**pod_template["metadata"], "name": f"koordlet-{i:04d}"},
                    "spec": {**pod_template["spec"], "nodeName": name},
                }
            )
    params = KoordletCoverageParams(**SANDBOX)
    with fake_cluster(api, page_size=500) as cluster:
        fetched = koordlet_coverage.fetch(cluster, params)
    result = koordlet_coverage.evaluate(fetched, params, captured_at("healthy"))
    assert result.status is Status.FAILED
    assert len(result.errors) == 10
    assert result.errors[0] == f"{DS}: node node-0000 has no pod"
    assert result.details["coverage_by_class"]["fake"] == {"selected": 5000, "covered": 4990, "uncovered": 10}
    assert sum(r.path == "/api/v1/nodes" for r in api.requests) == 10
    assert sum(r.path.endswith("/pods") for r in api.requests) == 10


KWOK_DOWN = "kwok-down-nodes-not-ready"  # kwok stopped: every fake node Ready=Unknown, its pods marked NotReady
FAKE_DOWN = [f"kwok-node-{n}" for n in (0, 1, 10, 11, 12)]


def test_agent_pods_not_ready_with_their_nodes_are_degraded_and_name_the_nodes() -> None:
    """The node lifecycle controller marked the pods NotReady because their nodes are not: the nodes' outage,
    named, `degraded` (notify), not the agent's failure (page)."""
    result = run(data(KWOK_DOWN), KWOK_DOWN, **SANDBOX)
    assert result.status is Status.DEGRADED, result.errors
    assert result.summary == (
        "koordlet NotReady on 5 of 6 nodes, with the nodes themselves not Ready: " + ", ".join(sorted(FAKE_DOWN))
    )
    assert failures(result) == ["node-not-ready"] * 5
    assert all(
        e.startswith(f"{DS}: node kwok-node-")
        and "is not Ready (Ready=Unknown (NodeStatusUnknown)), so its koordlet pod is NotReady with it (pod koordlet-"
        in e
        for e in result.errors
    ), result.errors
    assert [step.command for step in result.next_steps] == [f"kubectl describe node {n}" for n in sorted(FAKE_DOWN)]
    assert result.details["node_not_ready_count"] == 5
    assert result.details["uncovered_count"] == 0
    assert result.details["coverage_by_class"]["real"] == {"selected": 1, "covered": 1, "uncovered": 0}


def test_the_same_outage_judged_by_real_nodes_only_is_ok() -> None:
    result = run(data(KWOK_DOWN), KWOK_DOWN)
    assert result.status is Status.OK, result.errors
    assert result.summary == "koordlet ready on all 1 selected nodes (1 real)"


def test_a_not_ready_node_without_any_agent_pod_still_fails_and_keeps_the_others_named() -> None:
    """The DaemonSet's pods tolerate the not-ready taint: a node with no pod at all is the DaemonSet's failure."""
    pods = [p for p in document(KWOK_DOWN, "koordlet_pods") if p["spec"]["nodeName"] != "kwok-node-0"]
    result = run(data(KWOK_DOWN, pods=pods), KWOK_DOWN, **SANDBOX)
    assert result.status is Status.FAILED
    assert result.summary == "koordlet not ready on 1 of 6 nodes: kwok-node-0"
    assert failures(result) == ["node-without-pod"] + ["node-not-ready"] * 4
    assert result.errors[0] == f"{DS}: node kwok-node-0 has no pod"


def test_more_than_ten_nodes_not_ready_are_named_then_counted() -> None:
    nodes = document(KWOK_DOWN, "nodes")
    pods = document(KWOK_DOWN, "koordlet_pods")
    fake_node = next(n for n in nodes if n["metadata"]["name"] == "kwok-node-0")
    fake_pod = next(p for p in pods if p["spec"]["nodeName"] == "kwok-node-0")
    many_nodes, many_pods = [], []
    for i in range(12):
        node = copy.deepcopy(fake_node)
        node["metadata"]["name"] = f"down-{i:02d}"
        pod = copy.deepcopy(fake_pod)
        pod["metadata"]["name"] = f"koordlet-down-{i:02d}"
        pod["spec"]["nodeName"] = f"down-{i:02d}"
        many_nodes.append(node)
        many_pods.append(pod)
    result = run(data(KWOK_DOWN, nodes=many_nodes, pods=many_pods), KWOK_DOWN, **SANDBOX)
    assert result.status is Status.DEGRADED
    assert failures(result) == ["node-not-ready"] * 10 + ["many-nodes-not-ready"]
    assert result.errors[-1] == f"{DS}: 2 more nodes not Ready (12 of 12 in all)"
