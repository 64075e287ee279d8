from __future__ import annotations

import pytest

from outpost.cluster import node_proxy, pod_proxy, service_proxy


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        (
            service_proxy("kruise-system", "kruise-webhook-service", 443, "/healthz", scheme="https"),
            "/api/v1/namespaces/kruise-system/services/https:kruise-webhook-service:443/proxy/healthz",
        ),
        (service_proxy("default", "web"), "/api/v1/namespaces/default/services/web/proxy/"),
        (
            pod_proxy("koordinator-system", "koord-manager-5d8f-abc", 8000, "readyz"),
            "/api/v1/namespaces/koordinator-system/pods/koord-manager-5d8f-abc:8000/proxy/readyz",
        ),
        (node_proxy("kwok-node-3", 10221, "/healthz"), "/api/v1/nodes/kwok-node-3:10221/proxy/healthz"),
        (node_proxy("n1", path="metrics", scheme="https"), "/api/v1/nodes/https:n1/proxy/metrics"),
    ],
)
def test_proxy_paths(built: str, expected: str) -> None:
    assert built == expected


def test_names_with_slash_are_refused() -> None:
    with pytest.raises(ValueError, match="invalid object name"):
        pod_proxy("ns", "../secrets", 80)
