"""The msgspec mirrors of the outline views (`outpost.kube.fast_outlines`), as `Cluster.iter_pages_as` and
`outpost.cluster.incremental` use them.

A LIST page or a watch event of nodes, pods or NodeMetrics decoded into the mirrors must reduce to exactly the
records the pydantic views give (both land in the same kept state), on the captured sandbox documents and on the
decoder benchmark's generated pages; and a page or event the mirror would read differently from the view (a lenient
value, a snake_case key, a zoneless time, sub-microsecond digits, bad UTF-8, an ERROR) must come out as the view
reads it: the same records, or the same `MalformedResponse` or `WatchBroken`.
"""

from __future__ import annotations

import copy
import json
import ssl
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import msgspec
import pytest

from bench.decode_pages import pages
from kit.fake_cluster import failure
from kit.node_fixtures import document, states
from outpost.cluster import incremental
from outpost.cluster.client import Cluster, ListPage, WatchBroken, _ListMeta
from outpost.errors import MalformedResponse
from outpost.kube import fast_outlines
from outpost.kube.conditions import Condition
from outpost.kube.daemons import daemon_pod
from outpost.kube.fast_outlines import (
    FastCondition,
    FastListMeta,
    FastNodeMetricOutline,
    FastNodeOutline,
    FastNodeReadinessStatus,
    FastNodeSchedulingSpec,
    FastNodeUsageStatus,
    FastObjectMeta,
    FastOwnerReference,
    FastPage,
    FastPodOutline,
    FastPodPlacementSpec,
    FastPodReadinessStatus,
)
from outpost.kube.nodes import nodemetric_usage, outline_facts
from outpost.kube.objects import (
    NodeMetricOutline,
    NodeOutline,
    NodeReadinessStatus,
    NodeSchedulingSpec,
    NodeUsageStatus,
    ObjectMeta,
    OwnerReference,
    PodOutline,
    PodPlacementSpec,
    PodReadinessStatus,
    View,
    parse,
)

WHERE = "LIST test"
KINDS: dict[str, tuple[type[View], Callable[[Any, str], object], tuple[str, ...]]] = {
    "node": (NodeOutline, outline_facts, ("nodes",)),
    "pod": (PodOutline, daemon_pod, ("koordlet_pods", "kruise_daemon_pods")),
    "nodemetric": (NodeMetricOutline, nodemetric_usage, ("nodemetrics",)),
}


def _listed(view: type[View], bodies: list[bytes], *, mirrored: bool = True) -> list[Any]:
    """The items `Cluster.iter_list_as` gives for `bodies` served as one LIST's pages (`mirrored=False`: today's
    path, the pydantic page adapter alone)."""
    by_token = {"": 0}
    for index, body in enumerate(bodies[:-1]):
        by_token[json.loads(body)["metadata"]["continue"]] = index + 1

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            content=bodies[by_token[request.url.params.get("continue", "")]],
            headers={"Content-Type": "application/json"},
        )

    with Cluster(
        "test", "https://test.invalid", verify=ssl.create_default_context(), transport=httpx.MockTransport(handler)
    ) as cluster:
        if mirrored:
            return list(cluster.iter_list_as(view, "/list"))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fast_outlines, "page_decoder", lambda _model: None)
            return list(cluster.iter_list_as(view, "/list"))


def _page(items: list[Any], token: str = "") -> bytes:
    return json.dumps(
        {"kind": "List", "metadata": {"resourceVersion": "7", "continue": token}, "items": items}, ensure_ascii=False
    ).encode()


def _captured() -> Iterator[tuple[str, str, list[Any]]]:
    for state in states():
        for kind, (_, _, names) in KINDS.items():
            for name in names:
                items = document(state, name)
                if items:
                    yield kind, f"{state}/{name}", items


CAPTURED = list(_captured())


@pytest.mark.parametrize(("kind", "where", "items"), CAPTURED, ids=[f"{k}:{w}" for k, w, _ in CAPTURED])
def test_captured_lists_reduce_to_the_records_the_views_give(kind: str, where: str, items: list[Any]) -> None:
    view, reduce, _ = KINDS[kind]
    bodies = [_page(items[:2], "next"), _page(items[2:])]  # two pages: `continue` is read from the mirror's page
    mirrored = _listed(view, bodies)
    assert all(isinstance(item, fast_outlines.MIRRORS[view]) for item in mirrored), where
    records = [reduce(item, WHERE) for item in mirrored]
    assert records == [reduce(item, WHERE) for item in _listed(view, bodies, mirrored=False)]
    # A watch event's object is validated into the view (`incremental._catch_up`): the same record.
    assert records == [reduce(parse(view, item, WHERE), WHERE) for item in items]


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_benchmarks_generated_pages_reduce_to_the_records_the_views_give(kind: str) -> None:
    view, reduce, _ = KINDS[kind]
    bodies = pages(kind, 1000, 250)
    records = [reduce(item, WHERE) for item in _listed(view, bodies)]
    assert records == [reduce(item, WHERE) for item in _listed(view, bodies, mirrored=False)]
    assert (
        records
        == [reduce(parse(view, item, WHERE), WHERE) for body in bodies[:1] for item in json.loads(body)["items"]]
        + records[250:]
    )


def test_page_metadata_reads_the_same() -> None:
    body = json.dumps(
        {"metadata": {"continue": "tok", "resourceVersion": "42", "remainingItemCount": 3}, "items": []}
    ).encode()
    fast = fast_outlines.page_decoder(NodeOutline)
    assert fast is not None
    page = fast.decode(body)
    assert (page.metadata.continue_, page.metadata.resource_version) == ("tok", "42")
    assert fast.decode(b'{"items": []}').metadata == FastListMeta()
    assert fast_outlines.page_decoder(View) is None  # no mirror: the view


MIRRORED: list[tuple[type[Any], type[msgspec.Struct]]] = [
    (ObjectMeta, FastObjectMeta),
    (OwnerReference, FastOwnerReference),
    (Condition, FastCondition),
    (NodeOutline, FastNodeOutline),
    (NodeSchedulingSpec, FastNodeSchedulingSpec),
    (NodeReadinessStatus, FastNodeReadinessStatus),
    (PodOutline, FastPodOutline),
    (PodPlacementSpec, FastPodPlacementSpec),
    (PodReadinessStatus, FastPodReadinessStatus),
    (NodeMetricOutline, FastNodeMetricOutline),
    (NodeUsageStatus, FastNodeUsageStatus),
    (_ListMeta, FastListMeta),
    (ListPage, FastPage),
]


@pytest.mark.parametrize(("view", "mirror"), MIRRORED, ids=[view.__name__ for view, _ in MIRRORED])
def test_a_mirror_reads_every_json_name_its_view_reads(view: type[Any], mirror: type[msgspec.Struct]) -> None:
    """Every field under the same JSON name, and a view's field read by its Python name too (populate_by_name)
    refuses the item in the mirror."""
    by_name = bool(view.model_config.get("populate_by_name"))
    names = {field.alias or name for name, field in view.model_fields.items()}
    names |= {name for name in view.model_fields if by_name}
    fields = dict(zip(mirror.__struct_fields__, mirror.__struct_encode_fields__, strict=True))
    assert set(fields.values()) == names
    for python_name, json_name in fields.items():
        if python_name.startswith("by_name_"):
            assert json_name == python_name.removeprefix("by_name_")
        elif python_name.endswith("_text"):  # updateTime, decoded as text (see FastNodeUsageStatus)
            assert hasattr(mirror, python_name.removesuffix("_text"))
        else:
            assert python_name in view.model_fields


def _at(item: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    item = copy.deepcopy(item)
    target: Any = item
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[path[-1]] = value
    return item


TIMES = [
    "2026-12-05T17:09:27",
    "null",
    30000000000,
    1764954567,
    "1764954567",
    "2026-12-05T17:09:27.9999999Z",
    "2026-12-05T17:09:27.123456789012345+02:00",
    "2026-12-05T17:09:27+0200",
    "2026-12-05 17:09:27Z",
    "2026-12-05t17:09:27z",
    "2026-12-05",
    "2026-12-05T17:09Z",
    "2026-12-05T17:09:27,5Z",
    "2026-12-05T23:59:60Z",
    "9999-12-31T23:59:59.9999999Z",
    "2026-12-05T17:09:27.Z",
    None,
    True,
    "",
]
INTS = ["40", 40.0, "40.0", "1e3", " 40", True, 2**70, 40.5, None]
BOOLS = ["true", "True", "yes", "1", 1, 0, 2, 1.0, "on", None]
STRINGS = [5, None, True, "\u00e9", "\\ud83d\\ude00", ""]
TIME_PATHS: dict[str, list[tuple[str | int, ...]]] = {
    "node": [
        ("metadata", "creationTimestamp"),
        ("metadata", "deletionTimestamp"),
        ("status", "conditions", 0, "lastHeartbeatTime"),
        ("status", "conditions", 0, "lastTransitionTime"),
    ],
    "pod": [("metadata", "deletionTimestamp"), ("status", "conditions", 0, "lastProbeTime")],
    "nodemetric": [("status", "updateTime"), ("metadata", "creationTimestamp")],
}
MUTATIONS: list[tuple[str, tuple[str | int, ...], Any]] = [
    *[(kind, path, value) for kind, paths in TIME_PATHS.items() for path in paths for value in TIMES],
    *[("node", ("metadata", "generation"), value) for value in INTS],
    *[("node", ("status", "conditions", 0, "observedGeneration"), value) for value in INTS],
    *[("node", ("spec", "unschedulable"), value) for value in BOOLS],
    *[("node", ("metadata", "ownerReferences"), [{"controller": value}]) for value in BOOLS],
    *[("node", ("status", "allocatable", "cpu"), value) for value in [32, 32.0, 32.5, "32", True, 2**70, None]],
    *[
        ("pod", path, value)
        for path in [
            ("metadata", "name"),
            ("spec", "nodeName"),
            ("status", "phase"),
            ("metadata", "labels", "app"),
            ("status", "conditions", 0, "status"),
        ]
        for value in STRINGS
    ],
    *[
        (kind, path, "x")
        for kind, path in [
            ("pod", ("spec", "node_name")),
            ("pod", ("metadata", "deletion_timestamp")),
            ("pod", ("status", "conditions", 0, "last_transition_time")),
            ("node", ("api_version",)),
            ("node", ("metadata", "owner_references")),
            ("nodemetric", ("status", "update_time")),
            ("nodemetric", ("status", "node_metric")),
        ]
    ],
    ("pod", ("spec", "node_name"), "n-elsewhere"),
    ("pod", ("spec",), {"node_name": "n9"}),
    ("nodemetric", ("status",), {"update_time": "2026-12-05T17:09:27Z"}),
    ("node", ("metadata", "resource_version"), "9"),
    ("nodemetric", ("status", "updateTime"), "2026-12-05T17:09:27.1234567+02:00"),
    ("nodemetric", ("status", "nodeMetric", "nodeUsage", "resources", "cpu"), 2**70),
    ("nodemetric", ("status", "nodeMetric", "nodeUsage", "resources", "cpu"), 1.5),
    ("node", ("status", "conditions"), None),
    ("node", ("metadata",), None),
    ("pod", ("status",), []),
]


def _mutable(kind: str) -> dict[str, Any]:
    """The first captured object of `kind` with every field a mutation reaches (a pod with conditions)."""
    return next(
        found
        for found_kind, _, items in CAPTURED
        if found_kind == kind
        for found in items
        if kind != "pod" or found.get("status", {}).get("conditions")
    )


MUTATION_IDS = [f"{kind}:{'.'.join(map(str, path))}={value!r}" for kind, path, value in MUTATIONS]


def _unescaped_surrogates(body: bytes) -> bytes:
    """The STRINGS surrogate pair as the JSON escape it stands for (json.dumps escaped its backslashes)."""
    return body.replace(b"\\\\ud83d\\\\ude00", b"\\ud83d\\ude00")


def _outcome(view: type[View], reduce: Callable[[Any, str], object], body: bytes, *, mirrored: bool) -> object:
    try:
        return [reduce(item, WHERE) for item in _listed(view, [body], mirrored=mirrored)]
    except MalformedResponse as error:
        return f"MalformedResponse: {error}"


@pytest.mark.parametrize("field", ["creationTimestamp", "deletionTimestamp"])
def test_a_zoneless_time_where_the_view_wants_a_zone_is_malformed(field: str) -> None:
    item = _at(document("healthy", "koordlet_pods")[0], ("metadata", field), "2026-12-05T17:09:27")
    with pytest.raises(MalformedResponse, match=rf"pod \S+: field metadata\.{field[:8]}.*timezone"):
        _listed(PodOutline, [_page([item])])


@pytest.mark.parametrize(
    "body",
    [
        b'{"items": [{"metadata": {"name": "n1"}, "status": {"images": ["\xff"]}}]}',  # msgspec skips without checking
        b'{"items": [{"metadata": {"name": "n1"}, "spec": {"unschedulable": NaN}}]}',
        b'{"items": [], "metadata": {"continue": 7}}',
        b'{"items": null}',
        b'{"items": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
    ],
)
def test_a_page_the_mirror_refuses_is_the_views_malformed_response(body: bytes) -> None:
    fast = fast_outlines.page_decoder(NodeOutline)
    assert fast is not None
    with pytest.raises(fast_outlines.Refused):
        fast.decode(body)
    assert isinstance(_outcome(NodeOutline, outline_facts, body, mirrored=True), str)
    assert _outcome(NodeOutline, outline_facts, body, mirrored=True) == _outcome(
        NodeOutline, outline_facts, body, mirrored=False
    )


def test_the_known_difference_json_nested_past_pydantics_200_levels_within_the_recursion_limit() -> None:
    """pydantic-core refuses a document nested 200 levels deep; the mirror reads what it needs of one (Go's API
    server allows 10,000), and anything deeper than the interpreter goes is refused (test above)."""
    body = b'{"items": [{"metadata": {"name": "n1"}, "x": ' + b"[" * 300 + b"]" * 300 + b"}]}"
    assert _outcome(NodeOutline, outline_facts, body, mirrored=True) == [
        outline_facts(NodeOutline.model_validate({"metadata": {"name": "n1"}}), WHERE)
    ]
    assert "recursion limit" in str(_outcome(NodeOutline, outline_facts, body, mirrored=False))


def _event(kind: str, item: Any) -> bytes:
    return json.dumps({"type": kind, "object": item}, ensure_ascii=False).encode()


def _followed(view: type[Any], reduce: Callable[[Any, str], object], line: bytes, *, mirrored: bool) -> object:
    """What `incremental._catch_up` makes of one event line: its type and reduced object, or the error."""
    with pytest.MonkeyPatch.context() as patch:
        if not mirrored:
            patch.setattr(fast_outlines, "event_decoder", lambda _model: None)
        decode = incremental._event_decoder(view, WHERE)
        try:
            kind, decoded = decode(line)
            return kind, reduce(decoded, WHERE)
        except (MalformedResponse, WatchBroken) as error:
            return f"{type(error).__name__}: {error}"


@pytest.mark.parametrize(("kind", "where", "items"), CAPTURED, ids=[f"{k}:{w}" for k, w, _ in CAPTURED])
def test_captured_objects_as_watch_events_reduce_to_the_records_the_views_give(
    kind: str, where: str, items: list[Any]
) -> None:
    view, reduce, _ = KINDS[kind]
    for event_type in ("ADDED", "MODIFIED", "DELETED"):
        for item in items:
            line = _event(event_type, item)
            fast = fast_outlines.event_decoder(view)
            assert fast is not None
            assert isinstance(fast.decode(line).object, fast_outlines.MIRRORS[view]), where
            assert _followed(view, reduce, line, mirrored=True) == _followed(view, reduce, line, mirrored=False)
            assert _followed(view, reduce, line, mirrored=True) == (event_type, reduce(parse(view, item, WHERE), WHERE))


def _read_as(form: str, view: type[View], reduce: Callable[[Any, str], object], item: Any, *, mirrored: bool) -> object:
    """What the reader of `form` makes of `item`: a list page of it (`_outcome`) or a MODIFIED watch event
    (`_followed`)."""
    if form == "page":
        return _outcome(view, reduce, _unescaped_surrogates(_page([item])), mirrored=mirrored)
    return _followed(view, reduce, _unescaped_surrogates(_event("MODIFIED", item)), mirrored=mirrored)


@pytest.mark.parametrize("form", ["page", "event"])
@pytest.mark.parametrize(("kind", "path", "value"), MUTATIONS, ids=MUTATION_IDS)
def test_a_page_and_an_event_read_as_their_view_reads_them_whatever_a_field_holds(
    form: str, kind: str, path: tuple[str | int, ...], value: Any
) -> None:
    view, reduce, _ = KINDS[kind]
    item = _at(_mutable(kind), path, value)
    assert _read_as(form, view, reduce, item, mirrored=True) == _read_as(form, view, reduce, item, mirrored=False)


BOOKMARK = {
    "kind": "Node",
    "apiVersion": "v1",
    "metadata": {
        "resourceVersion": "5307",
        "creationTimestamp": None,
        "annotations": {"k8s.io/initial-events-end": "true"},
    },
}
GONE = failure(410, "Expired", "too old resource version: 5 (2599)")


@pytest.mark.parametrize(
    "line",
    [
        _event("BOOKMARK", BOOKMARK),  # as the API server sends it (captured from the sandbox)
        _event("ERROR", GONE),
        _event("ERROR", {"kind": "Status", "code": 500, "message": "internal error"}),
        _event("SYNC", BOOKMARK),
        _event("added", BOOKMARK),
        b'{"type": "ADDED"}',
        b'{"object": {}}',
        b'{"type": "ADDED", "object": null}',
        b'{"type": "ADDED", "object": []}',
        b"[]",
        b"not json",
        _event("MODIFIED", {"metadata": {"name": "n1", "resourceVersion": 7}}),
        b'{"type": "ADDED", "object": {"metadata": {"name": "\xff"}}}',
    ],
    ids=lambda line: line[:60].decode(errors="replace"),
)
def test_a_bookmark_an_error_or_a_broken_event_reads_as_the_view_reads_it(line: bytes) -> None:
    assert _followed(NodeOutline, outline_facts, line, mirrored=True) == _followed(
        NodeOutline, outline_facts, line, mirrored=False
    )


def test_a_410_error_event_is_gone_and_names_the_status() -> None:
    with pytest.raises(WatchBroken, match="ERROR event 410 Expired: too old resource version") as raised:
        incremental._event_decoder(NodeOutline, WHERE)(_event("ERROR", GONE))
    assert raised.value.gone
    assert fast_outlines.event_decoder(View) is None  # no mirror: the view
