"""The fake API server under the real `Cluster`: GET, 404, LIST with selectors and pagination, failures."""

from __future__ import annotations

from typing import Any

import pytest

from kit import FakeApiServer, fake_cluster
from outpost.cluster import Deadline
from outpost.errors import ClusterAuthError, ClusterResponseError, ClusterTimeout, ClusterUnreachable
from outpost.kube.paths import LEASES, NODES, PODS, collection_path, object_path


def pod(name: str, namespace: str, node: str, **labels: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }


@pytest.fixture
def api() -> FakeApiServer:
    server = FakeApiServer()
    for index in range(5):
        server.add(pod(f"koordlet-{index}", "koordinator-system", f"n{index}", **{"koord-app": "koordlet"}))
    server.add(pod("kruise-daemon-0", "kruise-system", "n0", **{"control-plane": "daemon"}))
    server.add({"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n0"}})
    return server


def test_get_object_and_404_as_none(api: FakeApiServer) -> None:
    with fake_cluster(api) as cluster:
        found = cluster.get_object(object_path(PODS, "koordlet-3", "koordinator-system"))
        assert found is not None
        assert found["spec"]["nodeName"] == "n3"
        assert cluster.get_object(object_path(PODS, "koordlet-9", "koordinator-system")) is None
        assert cluster.get_object(object_path(LEASES, "koordlet-3", "koordinator-system")) is None
        response = cluster.get(object_path(NODES, "n9"))
    assert response.status_code == 404
    assert response.json()["reason"] == "NotFound"


def test_list_paginates_with_opaque_continue_tokens(api: FakeApiServer) -> None:
    with fake_cluster(api, page_size=2) as cluster:
        items = cluster.list(collection_path(PODS, "koordinator-system"))
    assert [i["metadata"]["name"] for i in items] == [f"koordlet-{i}" for i in range(5)]
    lists = [r for r in api.requests if r.path == "/api/v1/namespaces/koordinator-system/pods"]
    assert len(lists) == 3
    assert [r.param("limit") for r in lists] == ["2", "2", "2"]
    assert lists[0].param("continue") is None
    assert lists[1].param("continue")
    assert lists[2].param("continue")
    assert "kind" not in items[0]  # LIST items of built-in kinds carry no kind, as on the API server


def test_list_all_namespaces_and_selectors(api: FakeApiServer) -> None:
    with fake_cluster(api) as cluster:
        everything = cluster.list(collection_path(PODS))
        daemons = cluster.list(collection_path(PODS), label_selector="control-plane=daemon")
        set_based = cluster.list(collection_path(PODS), label_selector="koord-app in (koordlet),!control-plane")
        on_n0 = cluster.list(collection_path(PODS), field_selector="spec.nodeName=n0")
        not_on_n0 = cluster.list(collection_path(PODS, "koordinator-system"), field_selector="spec.nodeName!=n0")
        by_name = cluster.list(collection_path(NODES), field_selector="metadata.name=n0")
    assert len(everything) == 6
    assert [p["metadata"]["name"] for p in daemons] == ["kruise-daemon-0"]
    assert len(set_based) == 5
    assert sorted(p["metadata"]["name"] for p in on_n0) == ["koordlet-0", "kruise-daemon-0"]
    assert len(not_on_n0) == 4
    assert [n["metadata"]["name"] for n in by_name] == ["n0"]
    assert api.requests[1].param("labelSelector") == "control-plane=daemon"


def test_metadata_only_list(api: FakeApiServer) -> None:
    with fake_cluster(api) as cluster:
        items = cluster.list(collection_path(PODS, "kruise-system"), metadata_only=True)
    assert items == [
        {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {
                "name": "kruise-daemon-0",
                "namespace": "kruise-system",
                "labels": {"control-plane": "daemon"},
            },
        }
    ]


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"fieldSelector": "spec.containers=web"}, 400),
        ({"labelSelector": "a in (b"}, 400),
        ({"limit": "2", "continue": "not-a-token"}, 410),
    ],
)
def test_list_refusals_like_the_api_server(api: FakeApiServer, params: dict[str, str], status: int) -> None:
    with fake_cluster(api) as cluster, pytest.raises(ClusterResponseError) as caught:
        cluster.get_json(collection_path(PODS), params)
    assert caught.value.status_code == status


def test_stale_continue_token_is_gone(api: FakeApiServer) -> None:
    with fake_cluster(api) as cluster:
        first = cluster.get_json(collection_path(PODS), {"limit": 2})
        api.resource_version += 1  # the collection changed and the token's snapshot expired
        with pytest.raises(ClusterResponseError, match="410"):
            cluster.get_json(collection_path(PODS), {"limit": 2, "continue": first["metadata"]["continue"]})


def test_canned_text_bodies_and_failures(api: FakeApiServer) -> None:
    api.respond("/readyz", 500, "[-]etcd failed: reason withheld\nreadyz check failed\n")
    api.respond("/api/v1/nodes", 403, {"kind": "Status", "message": 'nodes is forbidden: User "outpost-probe"'})
    api.hang("/livez")
    api.unreachable("/version")
    with fake_cluster(api, deadline=Deadline(30)) as cluster:
        ready = cluster.get("/readyz", accept="text/plain")
        assert (ready.status_code, ready.text.splitlines()[0]) == (500, "[-]etcd failed: reason withheld")
        with pytest.raises(ClusterAuthError, match=r"HTTP 403 .*forbidden"):
            cluster.list(collection_path(NODES))
        with pytest.raises(ClusterTimeout, match="GET /livez on cluster fake: read timed out"):
            cluster.get("/livez")
        with pytest.raises(ClusterUnreachable, match="connection refused"):
            cluster.get("/version")


def test_unknown_resources_are_404(api: FakeApiServer) -> None:
    with fake_cluster(api) as cluster:
        assert cluster.get("/apis/example.com/v1/widgets").status_code == 404
        assert cluster.get("/api/v1/namespaces/default/nodes").status_code == 404  # nodes are cluster-scoped


def test_objects_need_a_kind() -> None:
    with pytest.raises(ValueError, match="known kind"):
        FakeApiServer().add({"metadata": {"name": "x"}})
    with pytest.raises(ValueError, match="without namespace"):
        FakeApiServer().add({"kind": "Pod", "metadata": {"name": "x"}})
