"""Builders for the API server's proxy paths (docs/contracts.md "Kubernetes API server").

    /api/v1/namespaces/NS/services/[https:]NAME[:PORT]/proxy/PATH
    /api/v1/namespaces/NS/pods/[https:]NAME[:PORT]/proxy/PATH
    /api/v1/nodes/[https:]NAME[:PORT]/proxy/PATH

The scheme prefix matters: a backend that only speaks TLS (every webhook) answers a plain-HTTP proxy
with a reset, which would read as "webhook down" although it is healthy.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import quote

Scheme = Literal["http", "https"]


def _target(name: str, port: int | str | None, scheme: Scheme | None) -> str:
    if not name or "/" in name:
        raise ValueError(f"invalid object name for a proxy path: {name!r}")
    prefix = f"{scheme}:" if scheme == "https" else ""
    suffix = f":{port}" if port not in (None, "") else ""
    return quote(f"{prefix}{name}{suffix}", safe=":")


def _tail(path: str) -> str:
    return path.lstrip("/")


def service_proxy(namespace: str, name: str, port: int | str | None = None, path: str = "",
                  scheme: Scheme | None = None) -> str:
    return f"/api/v1/namespaces/{namespace}/services/{_target(name, port, scheme)}/proxy/{_tail(path)}"


def pod_proxy(namespace: str, name: str, port: int | str | None = None, path: str = "",
              scheme: Scheme | None = None) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{_target(name, port, scheme)}/proxy/{_tail(path)}"


def node_proxy(name: str, port: int | str | None = None, path: str = "", scheme: Scheme | None = None) -> str:
    return f"/api/v1/nodes/{_target(name, port, scheme)}/proxy/{_tail(path)}"
