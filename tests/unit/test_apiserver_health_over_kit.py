"""apiserver-health end to end over the fake API server: the real `fetch` through the real `Cluster`,
then `evaluate`, on /livez and /readyz bodies captured from the sandbox's kube-apiserver."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit import NOW, FakeApiServer, fake_cluster
from outpost.checks import apiserver_health
from outpost.checks.apiserver_health import ApiserverHealthParams
from outpost.errors import ClusterAuthError, ClusterTimeout
from outpost.result import Status

CAPTURED = Path(__file__).parent / "fixtures" / "apiserver_health"


def serve(livez: str, readyz: str) -> FakeApiServer:
    api = FakeApiServer()
    for path, name in (("/livez", livez), ("/readyz", readyz)):
        status = int((CAPTURED / f"{name}.status").read_text())
        api.respond(path, status, (CAPTURED / f"{name}.body").read_text())
    return api


@pytest.mark.parametrize(
    ("livez", "readyz", "status", "summary"),
    [
        ("healthy_livez", "healthy_readyz", Status.OK, "apiserver live and ready"),
        ("etcd_down_livez", "etcd_down_readyz", Status.FAILED, "apiserver unhealthy: /livez 500, /readyz 500"),
        ("healthy_livez", "plain_readyz", Status.ERROR, "without a verbose health report"),
    ],
)
def test_fetch_and_evaluate(livez: str, readyz: str, status: Status, summary: str) -> None:
    api = serve(livez, readyz)
    params = ApiserverHealthParams(exclude=["informer-sync"])
    with fake_cluster(api) as cluster:
        data = apiserver_health.fetch(cluster, params)
    result = apiserver_health.evaluate(data, params, NOW)
    assert result.status is status
    assert summary in result.summary
    # fetch asked for the verbose report and passed the exclusion through, on both endpoints
    assert [(r.path, r.query) for r in api.requests] == [
        ("/livez", (("verbose", ""), ("exclude", "informer-sync"))),
        ("/readyz", (("verbose", ""), ("exclude", "informer-sync"))),
    ]


def test_a_hanging_readyz_is_a_probe_error_not_a_verdict() -> None:
    api = serve("healthy_livez", "healthy_readyz").hang("/readyz")
    with fake_cluster(api) as cluster, pytest.raises(ClusterTimeout, match="/readyz"):
        apiserver_health.fetch(cluster, ApiserverHealthParams())


def test_forbidden_is_an_auth_error() -> None:
    api = serve("healthy_livez", "healthy_readyz").respond("/livez", 401, {"kind": "Status", "message": "Unauthorized"})
    with fake_cluster(api) as cluster, pytest.raises(ClusterAuthError, match="HTTP 401"):
        apiserver_health.fetch(cluster, ApiserverHealthParams())
