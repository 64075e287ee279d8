"""Plain HTTPS reads of the sandbox API server for the sandbox's own tests (as the probe or as admin).

Outpost's checks go through `outpost.cluster`; these helpers let the sandbox tests look at the
cluster independently of the code under test.
"""

from __future__ import annotations

import datetime as dt
import ssl
from typing import Any

import httpx

KRUISE_WEBHOOK_HEALTHZ = "/api/v1/namespaces/kruise-system/services/https:kruise-webhook-service:443/proxy/healthz"
LS_WEB = "/api/v1/namespaces/default/services/ls-web:80/proxy/"


def age(timestamp: str) -> float:
    """Seconds since an RFC 3339 time from an object (renewTime, updateTime, ...)."""
    return (dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))).total_seconds()


def trust(sb: Any) -> ssl.SSLContext:
    """A TLS context that trusts only the sandbox's cluster CA."""
    return ssl.create_default_context(cafile=str(sb.ca_path))


def api(sb: Any, path: str, probe: bool = True, timeout: float = 10.0) -> httpx.Response:
    token = sb.probe_token if probe else sb.admin_token
    return httpx.get(sb.server + path, headers={"Authorization": f"Bearer {token}"}, verify=trust(sb), timeout=timeout)


def get_json(sb: Any, path: str) -> Any:
    r = api(sb, path, probe=False)
    assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text[:200]}"
    return r.json()


def dry_run_pod(
    sb: Any,
    labels: dict[str, str],
    owner: dict[str, Any] | None = None,
    namespace: str = "outpost-sandbox",
    timeout: float = 40.0,
) -> dict[str, Any]:
    """Create a pod with dryRun=All as admin: the admission chain runs, nothing is stored. Koordinator mutates it
    only if Outpost's ClusterColocationProfile selects it: in the probe's namespace, with the probe label."""
    metadata: dict[str, Any] = {"generateName": "dry-", "namespace": namespace, "labels": labels}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "library/busybox:1.36",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ]
        },
    }
    r = httpx.post(
        sb.server + f"/api/v1/namespaces/{namespace}/pods?dryRun=All",
        json=pod,
        headers={"Authorization": f"Bearer {sb.admin_token}"},
        verify=trust(sb),
        timeout=timeout,
    )
    assert r.status_code == 201, f"dry-run create: {r.status_code} {r.text[:200]}"
    out: dict[str, Any] = r.json()
    return out
