from __future__ import annotations

from typing import Any

import pytest

from outpost.kube.selectors import LabelSelector, MetadataSelector, parse_label_selector

KOORDLET = {"koord-app": "koordlet", "pod-template-generation": "1"}
KRUISE_DAEMON = {"control-plane": "daemon"}
VIRTUAL = {"type": "virtual-kubelet", "kubernetes.io/role": "agent"}


@pytest.mark.parametrize(
    ("raw", "labels", "matches", "query"),
    [
        ({}, KOORDLET, True, ""),  # empty selector matches everything
        (None, {}, True, ""),
        ({"matchLabels": {"koord-app": "koordlet"}}, KOORDLET, True, "koord-app=koordlet"),
        ({"matchLabels": {"koord-app": "koordlet"}}, KRUISE_DAEMON, False, "koord-app=koordlet"),
        (
            {"matchExpressions": [{"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]}]},
            VIRTUAL,
            False,
            "type notin (virtual-kubelet)",
        ),
        (
            {"matchExpressions": [{"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]}]},
            KOORDLET,
            True,
            "type notin (virtual-kubelet)",
        ),  # NotIn matches objects without the key
        (
            {"matchExpressions": [{"key": "type", "operator": "In", "values": ["kwok", "virtual-kubelet"]}]},
            VIRTUAL,
            True,
            "type in (kwok,virtual-kubelet)",
        ),
        ({"matchExpressions": [{"key": "type", "operator": "Exists"}]}, VIRTUAL, True, "type"),
        ({"matchExpressions": [{"key": "type", "operator": "DoesNotExist"}]}, VIRTUAL, False, "!type"),
        (
            {"matchLabels": {"control-plane": "daemon"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            KRUISE_DAEMON,
            False,
            "control-plane=daemon,tier",
        ),
    ],
)
def test_label_selector(raw: dict[str, Any] | None, labels: dict[str, str], matches: bool, query: str) -> None:
    selector = LabelSelector.from_api(raw)
    assert selector.matches(labels) is matches
    assert selector.to_query() == query
    # The rendered query means the same thing as the object form.
    assert parse_label_selector(query).matches(labels) is matches


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}, "unknown selector operator"),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "needs at least one value"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "takes no values"),
        ({"matchLabels": {"bad key!": "x"}}, "invalid label key"),
        ({"matchLabels": ["a"]}, "matchLabels must be an object"),
        ("a=b", "must be an object"),
    ],
)
def test_invalid_api_selectors(raw: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LabelSelector.from_api(raw)


@pytest.mark.parametrize(
    ("text", "labels", "matches"),
    [
        ("", {}, True),
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "web"}, True),
        ("app!=web", {}, True),
        ("app!=web", {"app": "web"}, False),
        ("app in (web, api), !canary", {"app": "api"}, True),
        ("app in (web, api), !canary", {"app": "api", "canary": "1"}, False),
        ("app notin (web)", {"app": "api"}, True),
        ("kubernetes.io/os=linux,type", {"kubernetes.io/os": "linux", "type": "kwok"}, True),
    ],
)
def test_parse_label_selector(text: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_label_selector(text).matches(labels) is matches


# "app in ()" is NOT refused: upstream reads it as the one value "" (tests/unit/kube/test_upstream_selectors.py).
@pytest.mark.parametrize("text", ["app in (web", "app in web)", "a=b,,c", "=web", "app in (web,"])
def test_parse_label_selector_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="invalid label selector"):
        parse_label_selector(text)


@pytest.mark.parametrize(
    ("selector", "labels", "annotations", "matches", "query"),
    [
        (
            MetadataSelector("annotation", "kwok.x-k8s.io/node", "fake"),
            {"type": "kwok"},
            {"kwok.x-k8s.io/node": "fake"},
            True,
            None,
        ),
        (MetadataSelector("annotation", "kwok.x-k8s.io/node", "fake"), {"kwok.x-k8s.io/node": "fake"}, {}, False, None),
        (MetadataSelector("label", "type", "kwok"), {"type": "kwok"}, {}, True, "type=kwok"),
        (MetadataSelector("label", "type"), {"type": "anything"}, None, True, "type"),
        (MetadataSelector("label", "type", "kwok"), None, None, False, "type=kwok"),
    ],
)
def test_metadata_selector(
    selector: MetadataSelector,
    labels: dict[str, str] | None,
    annotations: dict[str, str] | None,
    matches: bool,
    query: str | None,
) -> None:
    assert selector.matches(labels, annotations) is matches
    assert selector.label_query() == query


def test_metadata_selector_refuses_unknown_source() -> None:
    with pytest.raises(ValueError, match="label or annotation"):
        MetadataSelector("field", "x")  # type: ignore[arg-type]
