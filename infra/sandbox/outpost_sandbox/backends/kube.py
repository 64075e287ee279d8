"""A small, typed Kubernetes API client for the sandbox's own machinery (not for checks).

Guarantees: it authenticates with exactly what the kubeconfig names (client certificate or bearer
token, server CA), never disables TLS verification, and every failure is a `SandboxApiError` whose
one-line message names the verb, the path and the status, never a credential. It speaks plain
REST (GET/POST/PATCH/DELETE, server-side apply) so the sandbox needs no generated client; checks
reach the cluster through `outpost.cluster`, never through this module.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

FIELD_MANAGER = "outpost-sandbox"


class SandboxApiError(Exception):
    """An API call made by the sandbox machinery failed; `status` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True)
class KubeAccess:
    """What is needed to talk to one API server: base URL, TLS context and auth headers."""

    server: str
    ssl_context: ssl.SSLContext
    headers: dict[str, str] = field(default_factory=dict)


def _material(entry: dict[str, Any], key: str, base: Path) -> bytes | None:
    """Return PEM bytes from `<key>-data` (base64) or from the file `<key>` (relative to the kubeconfig)."""
    data = entry.get(f"{key}-data")
    if data:
        return base64.b64decode(data)
    path = entry.get(key)
    if path:
        p = Path(path)
        return (p if p.is_absolute() else base / p).read_bytes()
    return None


def load_kubeconfig(path: Path | str) -> KubeAccess:
    """Read the current context of a kubeconfig into a `KubeAccess` (raises `SandboxApiError` if unusable)."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SandboxApiError(f"kubeconfig {path}: cannot read: {type(exc).__name__}") from None
    try:
        ctx_name = doc["current-context"]
        ctx = next(c["context"] for c in doc["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in doc["users"] if u["name"] == ctx["user"])
    except (KeyError, TypeError, StopIteration):
        raise SandboxApiError(f"kubeconfig {path}: current context is incomplete") from None
    base = path.parent
    ca = _material(cluster, "certificate-authority", base)
    ctx_ssl = ssl.create_default_context(cadata=ca.decode() if ca else None)
    cert = _material(user, "client-certificate", base)
    key = _material(user, "client-key", base)
    if cert and key:
        # load_cert_chain only takes paths: write both to a private temporary directory, then remove it.
        with tempfile.TemporaryDirectory(prefix="outpost-kc-") as tmp:
            os.chmod(tmp, 0o700)
            cpath, kpath = Path(tmp, "c.pem"), Path(tmp, "k.pem")
            cpath.write_bytes(cert)
            kpath.write_bytes(key)
            ctx_ssl.load_cert_chain(cpath, kpath)
    headers: dict[str, str] = {}
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
    return KubeAccess(server=str(cluster["server"]).rstrip("/"), ssl_context=ctx_ssl, headers=headers)


# kind -> (api prefix, plural, namespaced). Only what the sandbox applies.
RESOURCES: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Service": ("/api/v1", "services", True),
    "Secret": ("/api/v1", "secrets", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Event": ("/api/v1", "events", True),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases", True),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "MutatingWebhookConfiguration": (
        "/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False),
    "ValidatingWebhookConfiguration": (
        "/apis/admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", False),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "FlowSchema": ("/apis/flowcontrol.apiserver.k8s.io/v1", "flowschemas", False),
    "PriorityLevelConfiguration": (
        "/apis/flowcontrol.apiserver.k8s.io/v1", "prioritylevelconfigurations", False),
    "PodGroup": ("/apis/scheduling.sigs.k8s.io/v1alpha1", "podgroups", True),
    "NodeMetric": ("/apis/slo.koordinator.sh/v1alpha1", "nodemetrics", False),
}


def object_path(kind: str, name: str | None = None, namespace: str | None = None) -> str:
    """The REST path of a collection (name None) or of one object of `kind`."""
    try:
        prefix, plural, namespaced = RESOURCES[kind]
    except KeyError:
        raise SandboxApiError(f"kind {kind}: not known to the sandbox client") from None
    path = prefix
    if namespaced:
        if not namespace:
            raise SandboxApiError(f"{kind} {name}: namespaced kind without a namespace")
        path += f"/namespaces/{namespace}"
    path += f"/{plural}"
    if name:
        path += f"/{name}"
    return path


def _raise_for(verb: str, path: str, resp: httpx.Response) -> None:
    if resp.status_code < 400:
        return
    reason = ""
    try:
        body = resp.json()
        if isinstance(body, dict):
            reason = str(body.get("message", ""))[:200].replace("\n", " ")
    except ValueError:
        pass
    raise SandboxApiError(f"{verb} {path}: HTTP {resp.status_code} {reason}".rstrip(), resp.status_code)


class Kube:
    """Synchronous client (used by `install`, faults and tests)."""

    def __init__(self, access: KubeAccess, timeout: float = 30.0) -> None:
        self._client = httpx.Client(base_url=access.server, verify=access.ssl_context,
                                    headers=access.headers, timeout=timeout)

    @classmethod
    def from_kubeconfig(cls, path: Path | str, timeout: float = 30.0) -> Kube:
        return cls(load_kubeconfig(path), timeout)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Kube:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, verb: str, path: str, *, json_body: Any = None, content: bytes | None = None,
                params: dict[str, str] | None = None, headers: dict[str, str] | None = None,
                ok_missing: bool = False) -> Any:
        """One API call; returns the decoded JSON (or None for a tolerated 404)."""
        try:
            resp = self._client.request(verb, path, json=json_body, content=content, params=params,
                                        headers=headers)
        except httpx.HTTPError as exc:
            raise SandboxApiError(f"{verb} {path}: no answer ({type(exc).__name__})") from None
        if ok_missing and resp.status_code == 404:
            return None
        _raise_for(verb, path, resp)
        if not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            return resp.text

    def get(self, path: str, ok_missing: bool = False, **params: str) -> Any:
        return self.request("GET", path, params=params or None, ok_missing=ok_missing)

    def raw(self, path: str, timeout: float = 10.0) -> httpx.Response:
        """GET returning the response whatever its status (for proxy probes)."""
        try:
            return self._client.get(path, timeout=timeout)
        except httpx.HTTPError as exc:
            raise SandboxApiError(f"GET {path}: no answer ({type(exc).__name__})") from None

    def raw_with(self, path: str, headers: dict[str, str], timeout: float = 10.0) -> int:
        """GET with extra headers (e.g. impersonation); returns the status code whatever it is."""
        try:
            return self._client.get(path, headers=headers, timeout=timeout).status_code
        except httpx.HTTPError as exc:
            raise SandboxApiError(f"GET {path}: no answer ({type(exc).__name__})") from None

    def apply(self, obj: dict[str, Any], subresource: str | None = None) -> Any:
        """Server-side apply `obj` (forced: the sandbox owns these fields)."""
        meta = obj["metadata"]
        path = object_path(obj["kind"], meta["name"], meta.get("namespace"))
        if subresource:
            path += f"/{subresource}"
        return self.request("PATCH", path, json_body=obj,
                            params={"fieldManager": FIELD_MANAGER, "force": "true"},
                            headers={"Content-Type": "application/apply-patch+yaml"})

    def merge_patch(self, path: str, patch: dict[str, Any]) -> Any:
        return self.request("PATCH", path, json_body=patch,
                            headers={"Content-Type": "application/merge-patch+json"})

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path, ok_missing=True)


class AsyncKube:
    """Asynchronous twin of `Kube` for the backend daemon's loops."""

    def __init__(self, access: KubeAccess, timeout: float = 15.0) -> None:
        self._client = httpx.AsyncClient(base_url=access.server, verify=access.ssl_context,
                                         headers=access.headers, timeout=timeout)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def request(self, verb: str, path: str, *, json_body: Any = None,
                      params: dict[str, str] | None = None, headers: dict[str, str] | None = None,
                      ok_missing: bool = False, timeout: float | None = None) -> Any:
        try:
            resp = await self._client.request(
                verb, path, json=json_body, params=params, headers=headers,
                timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT)
        except httpx.HTTPError as exc:
            raise SandboxApiError(f"{verb} {path}: no answer ({type(exc).__name__})") from None
        if ok_missing and resp.status_code == 404:
            return None
        _raise_for(verb, path, resp)
        return resp.json() if resp.content else None

    async def get(self, path: str, **params: str) -> Any:
        return await self.request("GET", path, params=params or None)

    async def apply(self, obj: dict[str, Any], subresource: str | None = None) -> Any:
        meta = obj["metadata"]
        path = object_path(obj["kind"], meta["name"], meta.get("namespace"))
        if subresource:
            path += f"/{subresource}"
        return await self.request("PATCH", path, json_body=obj,
                                  params={"fieldManager": FIELD_MANAGER, "force": "true"},
                                  headers={"Content-Type": "application/apply-patch+yaml"})
