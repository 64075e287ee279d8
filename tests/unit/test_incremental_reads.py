"""Incremental reads (`outpost.cluster.incremental`) over the kit's fake API server, under the real `Cluster`.

Each case is a warm instance: a first read anchors the state with a LIST, changes are made, and a second read in
the same process must give exactly what a fresh LIST gives, whether it followed a watch or fell back to a LIST,
and say which in `Cluster.reads`. The real API server's behaviour (bookmarks, 410) is proven on the sandbox in
tests/e2e/test_incremental_reads_e2e.py.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kit.fake_cluster import FakeApiServer, fake_cluster
from kit.node_fixtures import facts_and_usage, serve
from outpost.cluster import Cluster, Deadline, warm
from outpost.cluster.incremental import LIST_ONLY_RUNS, Collection, read_collection, read_collections
from outpost.cluster.nodes import (
    daemon_pod_collection,
    node_collection,
    read_daemon_pods,
    read_nodes,
    read_nodes_and_nodemetrics,
)
from outpost.errors import MalformedResponse
from outpost.kube.nodes import NodesAndUsage, outline_facts
from outpost.kube.objects import NodeOutline
from outpost.kube.paths import KINDS, NODE_METRICS, NODES, collection_path

NODE_PATH = collection_path(NODES)
HEALTHY = list(serve("healthy").objects.values())  # captured from the sandbox (tests/unit/fixtures/nodes)


def _nodes() -> list[dict[str, Any]]:
    return [copy.deepcopy(o) for o in HEALTHY if o.get("kind") == "Node"]


def _api(*, pods: bool = False) -> FakeApiServer:
    api = FakeApiServer()
    api.add_all(_nodes() + ([copy.deepcopy(o) for o in HEALTHY if o.get("kind") == "Pod"] if pods else []))
    return api.serve_changes()


def _cluster(api: FakeApiServer, **options: Any) -> Cluster:
    cluster = fake_cluster(api, page_size=7, deadline=Deadline(30))
    for key, value in options.items():
        setattr(cluster, key, value)
    return cluster


def _read(api: FakeApiServer, **options: Any) -> tuple[list[Any], str]:
    with _cluster(api, **options) as cluster:
        facts = read_nodes(cluster)
        return facts, cluster.reads[NODE_PATH]


def _listed(api: FakeApiServer) -> list[Any]:
    """What a cold instance would read now: the truth every warm read must equal."""
    saved = warm.size()
    with _cluster(api, incremental=False) as cluster:
        facts = read_nodes(cluster)
    assert warm.size() == saved
    return facts


def _renamed(node: dict[str, Any], name: str) -> dict[str, Any]:
    fresh = copy.deepcopy(node)
    fresh["metadata"]["name"] = name
    fresh["metadata"].pop("uid", None)
    return fresh


def _not_ready(node: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(node)
    for condition in changed["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = "False"
    return changed


def _cordoned(node: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(node)
    changed.setdefault("spec", {})["unschedulable"] = True
    return changed


Change = Callable[[FakeApiServer], None]


def _without_bookmarks(api: FakeApiServer) -> None:
    """A server without a watch cache, and a write elsewhere after the last node change: the watch's events
    never reach the collection's current resourceVersion, and nothing else can tell it is complete."""
    api.bookmarks = False
    lease = next(o for o in HEALTHY if o.get("kind") == "Lease")
    api.add(_renamed(lease, "another-lease"))


def _add(api: FakeApiServer) -> None:
    api.add(_renamed(_nodes()[0], "added-node"))


def _delete(api: FakeApiServer) -> None:
    api.remove(KINDS["Node"], _nodes()[1]["metadata"]["name"])


def _flip(api: FakeApiServer) -> None:
    api.add(_not_ready(_nodes()[2]))


def _many(api: FakeApiServer) -> None:
    _add(api)
    _delete(api)
    _flip(api)
    api.add(_cordoned(_nodes()[3]))
    api.remove(KINDS["Node"], "added-node")
    api.add(_renamed(_nodes()[0], "added-again"))


@pytest.mark.parametrize(
    ("change", "changes"),
    [
        (lambda api: None, 0),
        (_add, 1),
        (_delete, 1),
        (_flip, 1),
        (_many, 6),
    ],
    ids=["nothing", "added", "deleted", "not-ready", "six-changes"],
)
def test_a_warm_read_follows_the_changes_and_equals_a_fresh_list(change: Change, changes: int) -> None:
    api = _api()
    first, how = _read(api)
    assert how.startswith("list")
    assert "cold start" in how
    change(api)
    second, how = _read(api)
    assert how.startswith(f"watch, {changes} changes"), how
    assert second == _listed(api)
    if changes:
        assert second != first


def test_follows_run_after_run() -> None:
    api = _api()
    _read(api)
    for step in range(5):
        api.add(_renamed(_nodes()[0], f"step-{step}"))
        facts, how = _read(api)
        assert how.startswith("watch, 1 changes"), how
        assert facts == _listed(api)


@pytest.mark.parametrize(
    ("breakage", "named"),
    [
        (lambda api: api.forget_changes_before(api.resource_version), "410 Expired"),
        (lambda api: _without_bookmarks(api), "no bookmark"),
        (lambda api: setattr(api, "watch_status", 403), "HTTP 403"),
        (lambda api: setattr(api, "watch_status", 500), "HTTP 500"),
    ],
    ids=["gone-410", "no-bookmark", "watch-forbidden", "server-error"],
)
def test_a_watch_that_cannot_catch_up_falls_back_to_a_list(breakage: Change, named: str) -> None:
    api = _api()
    _read(api)
    _flip(api)
    breakage(api)
    facts, how = _read(api)
    assert how.startswith("list"), how
    assert named in how, how
    assert facts == _listed(api)


def test_after_410_the_next_run_follows_again() -> None:
    api = _api()
    _read(api)
    _flip(api)
    api.forget_changes_before(api.resource_version)
    assert "410 Expired" in _read(api)[1]
    _add(api)
    facts, how = _read(api)
    assert how.startswith("watch, 1 changes"), how
    assert facts == _listed(api)


def test_after_a_failed_watch_lists_for_a_while_then_tries_again() -> None:
    api = _api()
    _read(api)
    _flip(api)
    _without_bookmarks(api)
    assert "no bookmark" in _read(api)[1]
    api.bookmarks = True
    for _ in range(LIST_ONLY_RUNS):
        _add(api)
        facts, how = _read(api)
        assert how.startswith("list"), how
        assert "listing after a watch" in how, how
        assert facts == _listed(api)
    _delete(api)
    facts, how = _read(api)
    assert how.startswith("watch"), how
    assert facts == _listed(api)


def _churn(api: FakeApiServer, tag: str) -> None:
    """Every node changed forty times: more event bytes than one LIST of them."""
    for round_ in range(40):
        for node in _nodes():
            changed = copy.deepcopy(node)
            changed["metadata"].setdefault("annotations", {})[tag] = str(round_)
            api.add(changed)


def test_watches_that_cost_more_than_a_list_twice_in_a_row_hand_over_to_lists() -> None:
    api = _api()
    _read(api)
    _churn(api, "first")
    assert _read(api)[1].startswith("watch")  # once may be a rollout: still followed
    _flip(api)
    assert _read(api)[1].startswith("watch")  # a cheap one in between starts the count again
    _churn(api, "second")
    assert _read(api)[1].startswith("watch")
    _churn(api, "third")
    assert _read(api)[1].startswith("watch")  # twice in a row: LISTs from the next run
    _delete(api)
    facts, how = _read(api)
    assert how.startswith("list"), how
    assert "two watches in a row received more than a LIST" in how, how
    assert facts == _listed(api)


@pytest.mark.parametrize(
    "options", [{"incremental": False}, {"incremental_max_age_seconds": 0.0}], ids=["incremental-off", "state-too-old"]
)
def test_every_read_is_a_list_when_the_state_cannot_be_followed(options: dict[str, Any]) -> None:
    api = _api()
    _read(api, **options)
    _flip(api)
    facts, how = _read(api, **options)
    assert how.startswith("list"), how
    assert facts == _listed(api)


def test_a_resource_version_that_went_back_is_relisted() -> None:
    api = _api()
    _read(api)
    api.resource_version -= 500  # etcd restored from a backup
    facts, how = _read(api)
    assert how.startswith("list"), how
    assert "went back" in how
    assert facts == _listed(api)


def test_two_identities_never_share_state() -> None:
    api = _api()
    _read(api)
    _flip(api)
    with _cluster(api, identity=("fake", "https://fake-apiserver.invalid", "another")) as cluster:
        read_nodes(cluster)
        assert "cold start" in cluster.reads[NODE_PATH]


def test_a_malformed_object_in_a_watch_is_an_error_naming_it_and_the_state_is_dropped() -> None:
    api = _api()
    _read(api)
    broken = _nodes()[0]
    broken["spec"]["unschedulable"] = "maybe"
    api.add(broken)
    with _cluster(api) as cluster, pytest.raises(MalformedResponse, match=r"node .*field spec.unschedulable"):
        read_nodes(cluster)
    assert warm.size() == 0


def test_a_resource_version_that_is_not_a_number_is_never_followed() -> None:
    api = _api()
    original = api._list

    def opaque(route: Any, request: Any) -> Any:
        response = original(route, request)
        response.read()
        if b'"resourceVersion"' in response.content and b"watch" not in str(request.url).encode():
            return type(response)(
                response.status_code,
                content=response.content.replace(
                    f'"resourceVersion": "{api.resource_version}"'.encode(), b'"resourceVersion": "opaque-v1"'
                ),
                headers=response.headers,
            )
        return response

    api._list = opaque  # type: ignore[method-assign]
    _facts, how = _read(api)
    assert "not kept" in how
    assert warm.size() == 0
    _facts, how = _read(api)
    assert how.startswith("list")


def test_selected_pods_are_followed_with_their_selector() -> None:
    api = _api(pods=True)
    pods = [o for o in HEALTHY if o.get("kind") == "Pod" and o["metadata"]["namespace"] == "koordinator-system"]
    assert pods, "the healthy fixture holds koordlet pods"
    with _cluster(api) as cluster:
        first = read_daemon_pods(cluster, "koordinator-system", "koord-app=koordlet")
    gone = pods[0]
    api.remove(KINDS["Pod"], gone["metadata"]["name"], "koordinator-system")
    with _cluster(api) as cluster:
        second = read_daemon_pods(cluster, "koordinator-system", "koord-app=koordlet")
        how = cluster.reads[collection_path(KINDS["Pod"], "koordinator-system")]
    assert how.startswith("watch, 1 changes"), how
    assert [p.name for p in second] == [p.name for p in first if p.name != gone["metadata"]["name"]]
    watches = [r for r in api.requests if ("watch", "1") in r.query]
    assert watches
    assert all(("labelSelector", "koord-app=koordlet") in r.query for r in watches)


def test_the_watch_asks_for_bookmarks_from_the_kept_version_with_a_short_timeout() -> None:
    api = _api()
    _read(api)
    kept = api.resource_version
    _flip(api)
    _read(api)
    watch = next(r for r in api.requests if ("watch", "1") in r.query)
    assert dict(watch.query) == {
        "watch": "1",
        "resourceVersion": str(kept),
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "3",
    }


def test_a_view_kept_whole_is_followed_too() -> None:
    api = _api()
    collection = Collection(NODE_PATH, NodeOutline, outline_facts)
    with _cluster(api) as cluster:
        read_collection(cluster, collection)
    _add(api)
    with _cluster(api) as cluster:
        facts = read_collection(cluster, collection)
        assert cluster.reads[NODE_PATH].startswith("watch")
    assert "added-node" in [f.name for f in facts]


def test_two_runs_at_once_never_share_one_state() -> None:
    """`run --all` runs checks in threads: a read that finds the state taken by another reads in full."""
    api = _api()
    _read(api)
    with _cluster(api) as first, _cluster(api) as second:
        collection = Collection(NODE_PATH, NodeOutline, outline_facts)
        taken = warm.recall(first.identity, collection.key, 3600)
        assert taken is not None
        read_collection(second, collection)
        assert "cold start" in second.reads[NODE_PATH]


def test_two_collections_are_watched_side_by_side_and_each_equals_its_list() -> None:
    """`read_collections` opens every watch before it follows any (the API server schedules each bookmark from
    when its own watch opened, so a check waits for one bookmark, not one per collection)."""
    api = _api(pods=True)
    requests_when_followed: list[int] = []

    def noting_facts(view: NodeOutline, where: str) -> Any:
        requests_when_followed.append(len(api.requests))
        return outline_facts(view, where)

    nodes = Collection(NODE_PATH, NodeOutline, noting_facts)
    pods = daemon_pod_collection("koordinator-system", "koord-app=koordlet")
    pods_path = collection_path(KINDS["Pod"], "koordinator-system")
    with _cluster(api) as cluster:
        read_collections(cluster, nodes, pods)
    gone = next(o for o in HEALTHY if o.get("kind") == "Pod" and o["metadata"]["namespace"] == "koordinator-system")
    api.remove(KINDS["Pod"], gone["metadata"]["name"], "koordinator-system")
    _flip(api)
    requests_when_followed.clear()
    sent_before = len(api.requests)
    with _cluster(api) as cluster:
        followed_nodes, followed_pods = read_collections(cluster, nodes, pods)
        how = {path: cluster.reads[path] for path in (NODE_PATH, pods_path)}
    assert how[NODE_PATH].startswith("watch, 1 changes"), how
    assert how[pods_path].startswith("watch, 1 changes"), how
    sent = [(r.path, ("watch", "1") in r.query) for r in api.requests[sent_before:]]
    assert sent == [(NODE_PATH, False), (NODE_PATH, True), (pods_path, False), (pods_path, True)]
    assert requests_when_followed == [sent_before + 4], "a node event was applied before the pods' watch was open"
    with _cluster(api, incremental=False) as cluster:
        assert (followed_nodes, followed_pods) == read_collections(cluster, nodes, pods)


def test_a_watch_is_weighed_against_the_list_as_parsed_not_as_gzipped() -> None:
    """A gzip'd LIST is small on the wire and large to parse; a watch's events are parsed as received. Following
    stays worth it while it parses less than a LIST would, even when its bytes outnumber the gzip'd LIST's (5,000
    Nodes whose kubelets report status every 5 minutes)."""
    api = _api()
    api.gzip_lists = True
    with _cluster(api) as cluster:
        read_nodes(cluster)
        listed_wire, listed_parsed = cluster.received_bytes, cluster.decoded_bytes
    assert listed_wire * 2 < listed_parsed, "the fake's LIST was not gzip'd"
    for round_ in range(4):
        for node in _nodes()[:2]:
            changed = copy.deepcopy(node)
            changed["metadata"].setdefault("annotations", {})["outpost.test/heartbeat"] = str(round_)
            api.add(changed)
        with _cluster(api) as cluster:
            facts = read_nodes(cluster)
            how, watched = cluster.reads[NODE_PATH], cluster.received_bytes
        assert how.startswith("watch, 2 changes"), how
        assert listed_wire < watched < listed_parsed, (listed_wire, watched, listed_parsed)
        assert facts == _listed(api)


def test_a_watch_left_unread_beside_another_and_cut_short_is_read_once_more_not_relisted() -> None:
    """The second of a check's watches waits, unread, while the first is followed; the API server may end it
    (its timeout, or a watcher too slow to drain) before it reaches the target. It is watched once more from where
    its events got to; a watch that was read at once and cut short is still relisted."""
    api = _api(pods=True)
    nodes = node_collection()
    pods = daemon_pod_collection("koordinator-system", "koord-app=koordlet")
    pods_path = collection_path(KINDS["Pod"], "koordinator-system")
    with _cluster(api) as cluster:
        read_collections(cluster, nodes, pods)
    koordlets = [o for o in HEALTHY if o.get("kind") == "Pod" and o["metadata"]["namespace"] == "koordinator-system"]
    for pod in koordlets[:2]:
        api.remove(KINDS["Pod"], pod["metadata"]["name"], "koordinator-system")
    _flip(api)
    api.cut_next_watch.add(pods_path)
    sent_before = len(api.requests)
    with _cluster(api) as cluster:
        followed = read_collections(cluster, nodes, pods)
        how = cluster.reads[pods_path]
    assert how.startswith("watch, 1 changes"), how  # the second change, on the second watch
    pod_watches = [r for r in api.requests[sent_before:] if r.path == pods_path and ("watch", "1") in r.query]
    assert len(pod_watches) == 2
    with _cluster(api, incremental=False) as cluster:
        assert followed == read_collections(cluster, nodes, pods)
    _flip(api)
    api.add(_renamed(_nodes()[0], "another-node"))
    api.cut_next_watch.add(NODE_PATH)
    facts, how = _read(api)  # alone: read at once, so cut short is a reason to relist
    assert how.startswith("list"), how
    assert "no bookmark" in how, how
    assert facts == _listed(api)


def test_nodes_and_nodemetrics_are_read_together_the_nodes_by_label_the_nodemetrics_in_their_own_pages() -> None:
    api = serve("healthy")
    with _cluster(api) as cluster:
        read = read_nodes_and_nodemetrics(cluster, "kubernetes.io/hostname=kwok-node-1", 2)
    nodes, samples = facts_and_usage("healthy")
    assert read == NodesAndUsage(tuple(n for n in nodes if n.name == "kwok-node-1"), samples)
    pages = [r for r in api.requests if r.path == collection_path(NODE_METRICS)]
    assert len(pages) == (len(samples) + 1) // 2
    assert all(r.param("limit") == "2" for r in pages)
