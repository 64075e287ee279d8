"""The sandbox machinery's access to its API server, through the product's one Kubernetes client.

Every request goes through `outpost.cluster.ClusterWriter`, so the sandbox has no HTTP client, kubeconfig reader
or error mapping of its own; failures are one-line `SandboxApiError`s (verb, path, status; 0 for no answer),
never a credential. `AsyncKube` serves the backend daemon's asyncio loops. Checks never use this module.
"""

from __future__ import annotations

import asyncio
import math
import re
import ssl
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from outpost.cluster.auth import build_credentials
from outpost.cluster.auth.credentials import TokenSource
from outpost.cluster.client import Query, Response
from outpost.cluster.deadline import Deadline
from outpost.cluster.writer import ClusterWriter
from outpost.config import KubeconfigAuth
from outpost.errors import ClusterAuthError, ClusterError, ClusterResponseError
from outpost.kube.paths import kind_of, object_path

FIELD_MANAGER = "outpost-sandbox"
CLUSTER_NAME = "sandbox"

T = TypeVar("T")


class SandboxApiError(Exception):
    """An API call made by the sandbox machinery failed; `status` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        self.status = status
        super().__init__(message)


def _call(action: Callable[[], T]) -> T:
    """Run one client call, turning the core's `ClusterError` into `SandboxApiError`."""
    try:
        return action()
    except ClusterAuthError as error:  # 401/403 (the core raises them; no status attribute): keep the status
        refused = re.search(r"HTTP (401|403)\b", str(error))
        raise SandboxApiError(str(error), int(refused.group(1)) if refused else 0) from None
    except ClusterError as error:
        raise SandboxApiError(str(error), error.status_code if isinstance(error, ClusterResponseError) else 0) from None


def _object_path(obj: Mapping[str, Any], subresource: str | None) -> str:
    """Where a manifest lives (by its `kind`, through the core's one table of kinds)."""
    meta = obj["metadata"]
    try:
        return object_path(kind_of(obj["kind"]), meta["name"], meta.get("namespace"), subresource)
    except ValueError as exc:
        raise SandboxApiError(f"{obj['kind']} {meta.get('name')}: {exc}") from None


class Kube:
    """Synchronous access (used by the launcher, `install`, faults and tests); one `ClusterWriter` underneath."""

    def __init__(
        self,
        server: str,
        verify: ssl.SSLContext,
        token: TokenSource | None,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._server, self._verify, self._token, self.timeout = server, verify, token, timeout
        # This client lives as long as the sandbox (the backend daemon reads the cluster every few seconds for
        # hours): neither a check run's deadline nor its byte budget (cluster.max_run_bytes) applies to it.
        self.writer = ClusterWriter(
            CLUSTER_NAME,
            server,
            verify=verify,
            token=token,
            read_timeout=timeout,
            deadline=Deadline(math.inf),
            headers=headers,
            max_run_bytes=sys.maxsize,
        )

    @classmethod
    def from_kubeconfig(cls, path: Path | str, timeout: float = 30.0, headers: Mapping[str, str] | None = None) -> Kube:
        """Who and where the kubeconfig's current context says, read by the product's one kubeconfig reader."""
        credentials = _call(lambda: build_credentials(KubeconfigAuth(mode="kubeconfig", path=str(path))))
        return cls(credentials.server, credentials.ssl_context, credentials.token, timeout, headers)

    @classmethod
    def for_server(
        cls, server: str, ca_file: Path | None = None, token: str | None = None, timeout: float = 10.0
    ) -> Kube:
        """A server named directly: the launcher's internal endpoint, or a component's health port."""
        verify = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
        return cls(server, verify, (lambda: token) if token is not None else None, timeout)

    def impersonating(self, headers: Mapping[str, str], timeout: float | None = None) -> Kube:
        """The same identity acting as another subject (`Impersonate-User`/`-Group` headers); close it after use."""
        return Kube(self._server, self._verify, self._token, timeout if timeout is not None else self.timeout, headers)

    def close(self) -> None:
        self.writer.close()

    def __enter__(self) -> Kube:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str, ok_missing: bool = False, **params: str) -> Any:
        """The JSON object at `path` (None for a 404 when `ok_missing`)."""
        if ok_missing and not params:
            return _call(lambda: self.writer.get_object(path))
        return _call(lambda: self.writer.get_json(path, params or None))

    def list(self, path: str, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        """Every item of a collection, page by page."""
        return _call(lambda: self.writer.list(path, label_selector=label_selector))

    def raw(self, path: str, timeout: float = 10.0, **params: str) -> Response:
        """GET returning the response whatever its status (for proxy probes); 401/403 raise."""
        return _call(lambda: self.writer.get(path, params or None, timeout=timeout))

    def create(self, path: str, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        return _call(lambda: self.writer.create(path, obj, dry_run=dry_run))

    def apply(self, obj: dict[str, Any], subresource: str | None = None) -> dict[str, Any]:
        """Server-side apply `obj` (forced: the sandbox owns these fields)."""
        path = _object_path(obj, subresource)
        return _call(lambda: self.writer.apply(path, obj, field_manager=FIELD_MANAGER))

    def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        return _call(lambda: self.writer.merge_patch(path, patch))

    def replace(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        return _call(lambda: self.writer.replace(path, obj))

    def delete(self, path: str, params: Query | None = None) -> dict[str, Any] | None:
        """DELETE; None when it was already gone."""
        return _call(lambda: self.writer.delete(path, params))


class AsyncKube:
    """The backend daemon's asyncio view of a `Kube`: each call runs in a worker thread (one client)."""

    def __init__(self, kube: Kube, workers: int = 8) -> None:
        self.kube = kube
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sandbox-kube")

    async def _run(self, action: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, action)

    async def run(self, action: Callable[[Kube], T]) -> T:
        """Any `Kube` call, in a worker thread."""
        return await self._run(lambda: action(self.kube))

    async def get(self, path: str) -> Any:
        return await self._run(lambda: self.kube.get(path))

    async def list(self, path: str) -> list[dict[str, Any]]:
        """Every item of a collection, page by page: at 5,000 nodes the 10,000 DaemonSet pods are more
        than one response may carry (the client's cap)."""
        return await self._run(lambda: self.kube.list(path))

    async def apply(self, obj: dict[str, Any], subresource: str | None = None) -> dict[str, Any]:
        return await self._run(lambda: self.kube.apply(obj, subresource))

    async def create(self, path: str, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        return await self._run(lambda: self.kube.create(path, obj, dry_run=dry_run))

    async def delete(self, path: str) -> dict[str, Any] | None:
        return await self._run(lambda: self.kube.delete(path))

    async def aclose(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.kube.close()
