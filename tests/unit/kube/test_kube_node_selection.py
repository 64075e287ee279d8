"""The node vocabulary the node checks share: facts of a node, which nodes are judged, naming the
first ten, DaemonSet coverage by node, and CPU usage reports (over captured sandbox nodes where it matters)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from kit import NOW
from kit.node_fixtures import document
from outpost.errors import MalformedResponse
from outpost.kube.daemons import DaemonPod, coverage, daemon_pod_of
from outpost.kube.messages import first_named
from outpost.kube.nodes import (
    NodeClass,
    NodeFacts,
    NodeSelection,
    facts_of,
    node_classes_parameter,
    nothing_selected,
    select_nodes,
    usage_from_metrics_k8s,
    usage_from_nodemetric,
)
from outpost.kube.selectors import MetadataSelector


def facts(name: str, cls: NodeClass = NodeClass.REAL, **kw: Any) -> NodeFacts:
    return NodeFacts(name=name, node_class=cls, **kw)


def test_captured_kwok_node_facts() -> None:
    node = facts_of(document("healthy", "nodes")[0])
    assert node.name == "kwok-node-0"
    assert node.node_class is NodeClass.FAKE  # the annotation, not kwokctl's label type=kwok
    assert node.is_ready
    assert node.ready_text == "Ready=True (KubeletReady)"
    assert node.allocatable_cpu_millis == 32000
    assert not node.unschedulable


@pytest.mark.parametrize(
    ("raw", "ready", "cpu", "text"),
    [
        ({"metadata": {"name": "n"}}, "", None, "no Ready condition"),  # every status field omitted
        (
            {
                "metadata": {"name": "n"},
                "status": {
                    "conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}],
                    "allocatable": {"cpu": "3500m"},
                },
            },
            "Unknown",
            3500,
            "Ready=Unknown (NodeStatusUnknown)",
        ),
        ({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "lots"}}}, "", None, "no Ready condition"),
    ],
)
def test_node_facts_zero_and_odd_values(raw: dict[str, Any], ready: str, cpu: int | None, text: str) -> None:
    node = facts_of(raw)
    assert (node.ready, node.allocatable_cpu_millis, node.ready_text) == (ready, cpu, text)
    assert not node.is_ready


@pytest.mark.parametrize("raw", [{"metadata": {}}, {"metadata": {"name": "n"}, "spec": {"unschedulable": "x"}}, []])
def test_node_facts_refuse_what_is_not_a_node(raw: Any) -> None:
    with pytest.raises(MalformedResponse):
        facts_of(raw)


NODES = [
    facts("real-1"),
    facts("fake-1", NodeClass.FAKE),
    facts("virt-1", NodeClass.VIRTUAL),
    facts("cordoned", NodeClass.REAL, unschedulable=True),
    facts("fake-2", NodeClass.FAKE, labels={"zone": "a"}),
]


BOTH = (NodeClass.REAL, NodeClass.FAKE)


@pytest.mark.parametrize(
    ("selection", "names", "by_class", "excluded"),
    [
        # the default: real nodes only (no agent runs on a KWOK fake node)
        (
            NodeSelection(),
            ["real-1"],
            {"real": 1},
            {"class fake not selected": 2, "class virtual not selected": 1, "cordoned (spec.unschedulable)": 1},
        ),
        (
            NodeSelection(classes=BOTH),
            ["fake-1", "fake-2", "real-1"],
            {"real": 1, "fake": 2},
            {"class virtual not selected": 1, "cordoned (spec.unschedulable)": 1},
        ),
        (
            NodeSelection(classes=(NodeClass.FAKE,)),
            ["fake-1", "fake-2"],
            {"fake": 2},
            {"class real not selected": 2, "class virtual not selected": 1},
        ),
        (
            NodeSelection(include_cordoned=True),
            ["cordoned", "real-1"],
            {"real": 2},
            {"class fake not selected": 2, "class virtual not selected": 1},
        ),
        (
            NodeSelection(classes=BOTH, label_selector="zone=a"),
            ["fake-2"],
            {"real": 0, "fake": 1},
            {"class virtual not selected": 1, "labels do not match zone=a": 3},
        ),
        (
            NodeSelection(classes=(NodeClass.VIRTUAL,)),
            ["virt-1"],
            {"virtual": 1},
            {"class real not selected": 2, "class fake not selected": 2},
        ),
    ],
)
def test_select_nodes(
    selection: NodeSelection, names: list[str], by_class: dict[str, int], excluded: dict[str, int]
) -> None:
    selected = select_nodes(NODES, selection)
    assert selected.names == names
    assert dict(selected.by_class) == by_class
    assert dict(selected.excluded) == excluded
    assert selected.total == len(NODES)


@pytest.mark.parametrize(
    ("selection", "nodes", "text"),
    [
        (
            NodeSelection(),
            [facts("fake-1", NodeClass.FAKE)],
            "no node selected (real nodes; 1 nodes read, excluded: 1 class fake not selected); KWOK fake nodes are "
            "left out by default (no agent runs on them); to judge them, set nodes.classes to [real, fake]",
        ),
        (
            NodeSelection(),
            [],
            "no node selected (real nodes; 0 nodes read, excluded: none); KWOK fake nodes are "
            "left out by default (no agent runs on them); to judge them, set nodes.classes to "
            "[real, fake]",
        ),
        # fake nodes already asked for: no opt-in hint
        (
            NodeSelection(classes=BOTH, label_selector="zone=b"),
            [facts("fake-1", NodeClass.FAKE)],
            "no node selected (real and fake nodes with labels zone=b; 1 nodes read, excluded: 1 labels do not "
            "match zone=b)",
        ),
    ],
)
def test_nothing_selected_says_why_and_how_to_opt_fake_nodes_in(
    selection: NodeSelection, nodes: list[NodeFacts], text: str
) -> None:
    assert nothing_selected(selection, select_nodes(nodes, selection)) == text


def test_select_by_annotation_or_label() -> None:
    kwok = MetadataSelector("annotation", "kwok.x-k8s.io/node", "fake")
    nodes = [facts_of(n) for n in document("healthy", "nodes")] + [facts("real-1", labels={"type": "kwok"})]
    assert select_nodes(nodes, kwok).names == [f"kwok-node-{i}" for i in range(5)]
    assert len(select_nodes(nodes, MetadataSelector("label", "type", "kwok")).nodes) == 6
    assert select_nodes(nodes, MetadataSelector("label", "app", "kwok")).nodes == ()


def test_selection_params_refuse_bad_input() -> None:
    with pytest.raises(ValidationError):
        NodeSelection(label_selector="a in (b")
    with pytest.raises(ValidationError):
        NodeSelection(classes=())
    with pytest.raises(ValidationError):
        NodeSelection.model_validate({"classes": ["real", "cloud"]})
    assert NodeSelection(label_selector="zone in (a,b)").label_query() == "zone in (a,b)"
    assert NodeSelection().label_query() is None
    assert NodeSelection().describe() == "real nodes"
    assert NodeSelection(classes=BOTH).describe() == "real and fake nodes"


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (0, ""),
        (3, "n0, n1, n2"),
        (10, ", ".join(f"n{i}" for i in range(10))),
        (13, ", ".join(f"n{i}" for i in range(10)) + " … (+3 more, 13 in all)"),
    ],
)
def test_first_named(count: int, expected: str) -> None:
    assert first_named([f"n{i}" for i in range(count)]) == expected


def test_coverage_by_node_not_by_daemonset_counters() -> None:
    nodes = [facts(n) for n in ("a", "b", "c", "d")]
    pods = [
        DaemonPod("p-a", "a", ready=True),
        DaemonPod("p-b", "b", ready=False, phase="Pending"),
        DaemonPod("p-c", "c", ready=True, terminating=True),
        DaemonPod("p-x", "elsewhere", ready=True),
    ]
    cover = coverage(nodes, pods)
    assert cover.covered == ("a",)
    assert cover.missing == ("d",)
    assert dict(cover.not_ready) == {"b": "pod p-b Pending, not Ready", "c": "pod p-c terminating"}
    assert cover.uncovered == ("b", "c", "d")


def test_captured_koordlet_pods() -> None:
    pods = [daemon_pod_of(p) for p in document("koordlet-missing", "koordlet_pods")]
    nodes = [facts_of(n) for n in document("koordlet-missing", "nodes")]
    assert coverage(nodes, pods).uncovered == ("kwok-node-0",)


def test_usage_from_captured_nodemetric_and_metrics_api() -> None:
    sample = usage_from_nodemetric(document("healthy", "nodemetrics")[0])
    assert sample.node == "kwok-node-0"
    assert sample.cpu_millis == 19840  # 62 % of 32 cores
    assert sample.age_seconds(datetime(2026, 12, 3, 13, 30, 24, tzinfo=UTC)) == 10.0
    empty = usage_from_nodemetric({"metadata": {"name": "n"}})
    assert (empty.taken_at, empty.cpu_millis, empty.age_seconds(NOW)) == (None, None, None)
    odd = usage_from_nodemetric(
        {"metadata": {"name": "n"}, "status": {"nodeMetric": {"nodeUsage": {"resources": {"cpu": "much"}}}}}
    )
    assert odd.cpu_millis is None
    k8s = usage_from_metrics_k8s(
        {
            "metadata": {"name": "n1"},
            "timestamp": "2026-12-03T13:30:00Z",
            "window": "20s",
            "usage": {"cpu": "250m", "memory": "1Gi"},
        }
    )
    assert (k8s.node, k8s.cpu_millis) == ("n1", 250)
    with pytest.raises(MalformedResponse):
        usage_from_metrics_k8s({"metadata": {}, "usage": {}})


class _Probed(BaseModel):
    classes: tuple[NodeClass, ...] = node_classes_parameter(
        "Node classes probed.", "nothing answers for a fake node", "something answers for fake nodes"
    )


def test_a_node_classes_parameter_is_real_only_by_default_never_empty_and_says_why() -> None:
    assert _Probed().classes == (NodeClass.REAL,)
    assert _Probed(classes=("real", "fake")).classes == (NodeClass.REAL, NodeClass.FAKE)
    with pytest.raises(ValidationError, match="at least 1 item"):
        _Probed(classes=())
    assert _Probed.model_fields["classes"].description == (
        "Node classes probed. Default real only: nothing answers for a fake node. "
        "Add fake only where something answers for fake nodes."
    )
