"""kruise-daemon-coverage over captured sandbox output (all nodes KWOK fake nodes whose stand-in
kruise-daemon answers, so fake nodes are opted in for coverage and /healthz, as the sandbox's
environment does): healthy, kruise-daemon-missing, the DaemonSet absent (feature gate
KruiseDaemon=false), virtual-kubelet nodes; per-node /healthz:10221 answers captured through the node
proxy (healthy 200 `ok`, backend-500, backend-down's 503 from the API server), classified by
`outpost.cluster.probes`; a hand-built real cluster, where a fake node's address is the kwok
controller's and only real nodes are probed by default; and fetch over the kit (the node proxy paths,
the opt-in, 403 when nodes/proxy is not granted, a hanging daemon)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kit import fake_cluster
from kit.node_fixtures import captured_at, document, healthz, serve
from kit.results import failures
from outpost.checks import kruise_daemon_coverage
from outpost.checks.kruise_daemon_coverage import (
    KruiseDaemonCoverageParams,
    KruiseDaemonData,
    healthz_targets,
)
from outpost.cluster.probes import ProbeOutcome, classify
from outpost.errors import ClusterError
from outpost.families.daemon_coverage import DaemonCoverageData
from outpost.kube.daemons import daemon_pod_of
from outpost.kube.nodes import facts_of
from outpost.kube.objects import DaemonSet, parse
from outpost.kube.paths import DAEMON_SETS
from outpost.result import Result, Status

DS = "daemonset kruise-system/kruise-daemon"
SANDBOX: dict[str, Any] = {"nodes": {"classes": ["real", "fake"]}, "healthz_classes": ["real", "fake"]}
COVERAGE = KruiseDaemonCoverageParams(**SANDBOX)
PROBING = KruiseDaemonCoverageParams(probe_healthz=True, **SANDBOX)


def coverage_data(
    state: str,
    nodes: list[dict[str, Any]] | None = None,
    ds: Any = "captured",
    pods: list[dict[str, Any]] | None = None,
) -> DaemonCoverageData:
    raw_ds = document(state, "kruise_daemon_ds") if ds == "captured" else ds
    return DaemonCoverageData(
        parse(DaemonSet, raw_ds, "t") if raw_ds else None,
        tuple(facts_of(n) for n in (nodes if nodes is not None else document(state, "nodes"))),
        tuple(daemon_pod_of(p) for p in (pods if pods is not None else document(state, "kruise_daemon_pods"))),
    )


def probed(
    state: str, answers_from: str | None = None, params: KruiseDaemonCoverageParams = PROBING
) -> KruiseDaemonData:
    """The captured state, with the captured node-proxy answers classified as the check would."""
    cover = coverage_data(state)
    answers = healthz(answers_from or state)
    outcomes = []
    for target in healthz_targets(cover, params):
        answer = answers[target.ref.removeprefix("node ")]
        verdict, detail = classify(answer["status"], answer["body"], target.expect_body)
        outcomes.append(ProbeOutcome(target, verdict, detail, answer["status"], answer["body"]))
    return KruiseDaemonData(cover, tuple(outcomes))


def run(d: KruiseDaemonData, params: KruiseDaemonCoverageParams | None = None, state: str = "healthy") -> Result:
    return kruise_daemon_coverage.evaluate(d, params or COVERAGE, captured_at(state))


def test_healthy_sandbox_is_ok_with_and_without_healthz() -> None:
    plain = run(KruiseDaemonData(coverage_data("healthy")))
    assert plain.status is Status.OK, plain.errors
    assert plain.summary == "kruise-daemon ready on all 5 selected nodes (0 real, 5 fake)"
    with_healthz = run(probed("healthy"), PROBING)
    assert with_healthz.status is Status.OK, with_healthz.errors
    assert with_healthz.summary.endswith("; :10221/healthz healthy on all 5 real and fake nodes probed")
    assert with_healthz.details["healthz"] == {
        "classes": ["real", "fake"],
        "probed": 5,
        "healthy": 5,
        "by_class": {"real": {"probed": 0, "healthy": 0}, "fake": {"probed": 5, "healthy": 5}},
        "not_probed": {},
        "failing": [],
    }


def test_kruise_daemon_missing_fault() -> None:
    result = run(KruiseDaemonData(coverage_data("kruise-daemon-missing")), state="kruise-daemon-missing")
    assert result.status is Status.FAILED
    assert result.errors == [f"{DS}: node kwok-node-0 has no pod"]
    assert failures(result) == ["node-without-pod"]
    assert "kubectl describe node kwok-node-0" in result.next_steps[0].command
    targets = healthz_targets(coverage_data("kruise-daemon-missing"), PROBING)
    assert [t.path for t in targets] == [f"/api/v1/nodes/kwok-node-{i}:10221/proxy/healthz" for i in range(1, 5)]


def test_daemonset_absent_says_feature_gate() -> None:
    result = run(KruiseDaemonData(coverage_data("healthy", ds=None, pods=[])))
    assert result.status is Status.FAILED
    assert result.summary == (
        f"{DS} absent (is OpenKruise running with feature gate KruiseDaemon=false?): no kruise-daemon on 5 nodes"
    )
    assert failures(result) == ["daemonset-absent"] + ["node-without-pod"] * 5
    assert result.next_steps[0].command == "kubectl -n kruise-system get daemonsets,pods -o wide"
    assert "KruiseDaemon=false" in result.next_steps[0].cause


@pytest.mark.parametrize(
    ("answers", "detail"),
    [
        ("backend-500-kruise-daemon", "HTTP 500 '[-]ping failed: reason withheld healthz check failed' (want 200)"),
        ("backend-down-kruise-daemon", "HTTP 503 (error trying to reach service: read tcp"),
    ],
)
def test_healthz_failing_on_every_node(answers: str, detail: str) -> None:
    result = run(probed("healthy", answers_from=answers), PROBING)
    assert result.status is Status.FAILED
    assert len(result.errors) == 5
    assert result.errors[0].startswith(f"{DS}: node kwok-node-0 :10221/healthz: {detail}")
    assert result.summary.startswith("kruise-daemon :10221/healthz failing on 5 of 5 probed nodes: node kwok-node-0")
    assert len(result.details["healthz"]["failing"]) == 5
    assert failures(result) == ["healthz-failing"] * 5
    pod = document("healthy", "kruise_daemon_pods")
    on_node_0 = next(p["metadata"]["name"] for p in pod if p["spec"]["nodeName"] == "kwok-node-0")
    assert result.next_steps[0].command == (
        "kubectl -n kruise-system get pods -l control-plane=daemon -o wide --field-selector spec.nodeName=kwok-node-0"
        f" && kubectl -n kruise-system describe pod {on_node_0}"
    )
    assert result.next_steps[0].see == f"kubectl -n kruise-system logs {on_node_0} --tail=200"


def test_body_match_is_optional() -> None:
    params = KruiseDaemonCoverageParams(probe_healthz=True, healthz_expect_body="ok", **SANDBOX)
    assert all(t.expect_body == "ok" for t in healthz_targets(coverage_data("healthy"), params))


def test_virtual_kubelet_nodes_are_not_expected_to_run_it() -> None:
    nodes = copy.deepcopy(document("healthy", "nodes"))
    virtual = copy.deepcopy(nodes[0])
    virtual["metadata"] = {"name": "vk-1", "labels": {"type": "virtual-kubelet"}}
    result = run(KruiseDaemonData(coverage_data("healthy", nodes=[*nodes, virtual])))
    assert result.status is Status.OK
    assert result.details["excluded"] == {"class virtual not selected": 1}


@pytest.mark.parametrize(
    ("params", "status", "asked", "summary_end", "errors"),
    [
        # default: coverage and /healthz of the real nodes only; the fake nodes are neither judged nor asked
        (
            {},
            Status.OK,
            ["node-a", "node-b"],
            "kruise-daemon ready on all 2 selected nodes (2 real); :10221/healthz healthy on all 2 real nodes probed",
            [],
        ),
        # fake nodes judged for coverage (kwok made their pods Ready) but not asked: their address is kwok's
        (
            {"nodes": {"classes": ["real", "fake"]}},
            Status.OK,
            ["node-a", "node-b"],
            "; :10221/healthz healthy on all 2 real nodes probed, 2 fake not probed",
            [],
        ),
        # asking them too reaches the kwok controller's pod IP, where nothing listens on 10221
        (
            {"nodes": {"classes": ["real", "fake"]}, "healthz_classes": ["real", "fake"]},
            Status.FAILED,
            ["kwok-node-0", "kwok-node-1", "node-a", "node-b"],
            None,
            [
                f"{DS}: node kwok-node-{i} :10221/healthz: HTTP 503 (error trying to reach service: dial tcp "
                "10.244.2.17:10221: connect: connection refused) (want 200)"
                for i in (0, 1)
            ],
        ),
    ],
)
def test_real_cluster_probes_real_nodes_only_by_default(
    params: dict[str, Any], status: Status, asked: list[str], summary_end: str | None, errors: list[str]
) -> None:
    checked = KruiseDaemonCoverageParams(probe_healthz=True, **params)
    answered = probed("real-cluster", params=checked)
    result = run(answered, checked, "real-cluster")
    assert [o.target.ref for o in answered.healthz] == [f"node {n}" for n in asked]
    assert result.status is status, result.errors
    assert result.errors == errors
    if summary_end:
        assert result.summary.endswith(summary_end)
    by_class = result.details["healthz"]["by_class"]
    assert by_class["real"] == {"probed": 2, "healthy": 2}
    assert result.details["healthz"]["not_probed"] == (
        {"fake": 2} if params.get("nodes") and "healthz_classes" not in params else {}
    )


def test_fetch_never_asks_fake_nodes_by_default() -> None:
    api = serve("real-cluster")
    for node in ("node-a", "node-b"):
        api.respond(f"/api/v1/nodes/{node}:10221/proxy/healthz", 200, "ok", content_type="text/plain")
    params = KruiseDaemonCoverageParams(probe_healthz=True, nodes={"classes": ["real", "fake"]})
    with fake_cluster(api) as cluster:
        fetched = kruise_daemon_coverage.fetch(cluster, params)
    assert sorted(r.path for r in api.requests if "/proxy/" in r.path) == [
        "/api/v1/nodes/node-a:10221/proxy/healthz",
        "/api/v1/nodes/node-b:10221/proxy/healthz",
    ]
    assert run(fetched, params, "real-cluster").status is Status.OK


def test_healthz_of_no_eligible_node_is_error() -> None:
    """probe_healthz asked of real nodes on a cluster selected for fake nodes only: nothing could be asked."""
    params = KruiseDaemonCoverageParams(probe_healthz=True, nodes={"classes": ["fake"]})
    result = run(KruiseDaemonData(coverage_data("healthy")), params)
    assert result.status is Status.ERROR
    assert result.summary == (
        f"{DS}: probe_healthz is on, but no selected node (fake nodes) is of healthz_classes "
        "(real): no :10221/healthz to ask; add fake to healthz_classes only where something "
        "answers for fake nodes"
    )
    assert failures(result) == ["healthz-nothing-eligible"]
    assert result.next_steps[0].command == "kubectl get nodes -o wide --show-labels"


def test_fetch_probes_only_when_opted_in_and_only_covered_nodes() -> None:
    api = serve("kruise-daemon-missing")
    for i in range(1, 5):
        api.respond(f"/api/v1/nodes/kwok-node-{i}:10221/proxy/healthz", 200, "ok", content_type="text/plain")
    with fake_cluster(api) as cluster:
        plain = kruise_daemon_coverage.fetch(cluster, COVERAGE)
        assert plain.healthz == ()
        assert not any("/proxy/" in r.path for r in api.requests)
        fetched = kruise_daemon_coverage.fetch(cluster, PROBING)
    assert [o.target.ref for o in fetched.healthz] == [f"node kwok-node-{i}" for i in range(1, 5)]
    result = run(fetched, PROBING, "kruise-daemon-missing")
    assert result.errors == [f"{DS}: node kwok-node-0 has no pod"]


def test_fetch_without_nodes_proxy_right_is_error_and_hang_is_failure() -> None:
    api = serve("healthy")
    api.respond(
        "/api/v1/nodes/kwok-node-0:10221/proxy/healthz",
        403,
        {"kind": "Status", "code": 403, "message": 'nodes "kwok-node-0" is forbidden'},
    )
    with fake_cluster(api) as cluster, pytest.raises(ClusterError, match="403"):
        kruise_daemon_coverage.fetch(cluster, PROBING)
    api = serve("healthy")
    api.respond("/version", 200, {"major": "1", "minor": "37"})
    for i in range(5):
        api.hang(f"/api/v1/nodes/kwok-node-{i}:10221/proxy/healthz")
    params = KruiseDaemonCoverageParams(probe_healthz=True, healthz_timeout_seconds=0.5, **SANDBOX)
    with fake_cluster(api) as cluster:
        fetched = kruise_daemon_coverage.fetch(cluster, params)
    result = run(fetched, params)
    assert result.status is Status.FAILED
    assert "no answer within 0.5 s through the API server proxy" in result.errors[0]


def test_fetch_absent_daemonset() -> None:
    api = serve("healthy")
    api.remove(DAEMON_SETS, "kruise-daemon", "kruise-system")
    with fake_cluster(api) as cluster:
        assert kruise_daemon_coverage.fetch(cluster, KruiseDaemonCoverageParams()).coverage.daemonset is None


KWOK_DOWN = "kwok-down-nodes-not-ready"  # kwok stopped: every fake node Ready=Unknown, its pods marked NotReady


@pytest.mark.parametrize("params", [COVERAGE, PROBING], ids=["coverage", "with healthz"])
def test_agent_pods_not_ready_with_their_nodes_are_degraded(params: KruiseDaemonCoverageParams) -> None:
    """Only the process node is covered, so only it is asked for /healthz (through the node proxy)."""
    cover = coverage_data(KWOK_DOWN)
    targets = healthz_targets(cover, params)
    assert [t.path for t in targets] == ["/api/v1/nodes/outpost-sandbox-node:10221/proxy/healthz"]
    outcomes = tuple(
        ProbeOutcome(t, *classify(200, "ok", t.expect_body), 200, "ok") for t in targets if params.probe_healthz
    )
    result = run(KruiseDaemonData(cover, outcomes), params, state=KWOK_DOWN)
    assert result.status is Status.DEGRADED, result.errors
    assert result.summary.startswith("kruise-daemon NotReady on 5 of 6 nodes, with the nodes themselves not Ready: ")
    assert failures(result) == ["node-not-ready"] * 5
    assert all("is not Ready (Ready=Unknown (NodeStatusUnknown)), so its kruise-daemon pod" in e for e in result.errors)
