"""Plain HTTPS reads of the sandbox API server for the sandbox's own tests (as the probe or as admin).

Outpost's checks go through `outpost.cluster`; these helpers let the sandbox tests look at the
cluster independently of the code under test.
"""

from __future__ import annotations

from typing import Any

import httpx

KRUISE_WEBHOOK_HEALTHZ = "/api/v1/namespaces/kruise-system/services/https:kruise-webhook-service:443/proxy/healthz"
LS_WEB = "/api/v1/namespaces/default/services/ls-web:80/proxy/"


def api(sb: Any, path: str, probe: bool = True, timeout: float = 10.0) -> httpx.Response:
    token = sb.probe_token if probe else sb.admin_token
    return httpx.get(sb.server + path, headers={"Authorization": f"Bearer {token}"},
                     verify=str(sb.ca_path), timeout=timeout)


def get_json(sb: Any, path: str) -> Any:
    r = api(sb, path, probe=False)
    assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text[:200]}"
    return r.json()
