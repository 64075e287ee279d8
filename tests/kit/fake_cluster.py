"""A fake Kubernetes API server behind `httpx.MockTransport`, under the REAL `outpost.cluster.Cluster`.

Why: a check's `fetch` (paths, selectors, pagination, 404 handling) and its `evaluate` (the verdict)
should be unit-tested together over real captured API JSON, without a sandbox and without patching
the client. Only the socket is replaced; every line of `Cluster` runs as in production.

What it serves, as the API server does:
- GET of an object it holds; 404 with a `Status` body (reason NotFound) when absent;
- LIST of a collection, namespaced (`/api/v1/namespaces/NS/pods`) or across all namespaces
  (`/api/v1/pods`), sorted by namespace/name, with `labelSelector` (equality and set-based, through
  `outpost.kube.selectors`), `fieldSelector` on `metadata.name`, `metadata.namespace`, `spec.nodeName`,
  `status.phase` (pods) and `reason` (events) (`=`, `==`, `!=`; any other field is a 400 as on the real
  server), `limit`/`continue` pagination with
  opaque continue tokens (a stale or foreign token is a 410 Gone), and the metadata-only
  `PartialObjectMetadataList` form;
- WATCH of a collection from a resourceVersion (`watch=1`): every `add`/`remove` after the first `serve_changes()`
  is a change with its own resourceVersion; a watch answers the changes since the one asked for (selectors
  applied), then a BOOKMARK at the current resourceVersion when `allowWatchBookmarks` is asked and `bookmarks`
  is on (off: a server without a watch cache, whose stream just ends), and an ERROR 410 for a resourceVersion
  older than `forget_changes_before`;
- anything registered with `respond` (health and proxy paths: text bodies, any status code), and
  failures on demand: `respond(path, 401)`, `hang(path)` (read timeout), `unreachable(path)`;
- every request is recorded (`requests`: method, path, query pairs, accept) so tests can assert on
  pagination and selectors.
"""

from __future__ import annotations

import base64
import gzip
import json
import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from outpost.cluster import Cluster, Deadline
from outpost.kube.paths import KINDS, Kind
from outpost.kube.selectors import parse_label_selector

SERVER = "https://fake-apiserver.invalid"
_CUSTOM_GROUPS = {"slo.koordinator.sh", "scheduling.sigs.k8s.io"}  # LIST items of CRDs keep kind/apiVersion
_BY_PATH: dict[tuple[str, str, str], Kind] = {(k.group, k.version, k.plural): k for k in KINDS.values()}
_FIELDS = {
    "metadata.name": lambda o: o.get("metadata", {}).get("name", ""),
    "metadata.namespace": lambda o: o.get("metadata", {}).get("namespace", ""),
    "spec.nodeName": lambda o: (o.get("spec") or {}).get("nodeName", ""),
}
_KIND_FIELDS = {
    "Pod": {"status.phase": lambda o: (o.get("status") or {}).get("phase", "")},
    "Event": {"reason": lambda o: o.get("reason", "")},
}
"""Field selectors the real API server supports for one kind only (a subset of what it offers)."""


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    accept: str

    def param(self, key: str) -> str | None:
        return next((v for k, v in self.query if k == key), None)


@dataclass(frozen=True)
class _Canned:
    status: int
    body: str
    content_type: str
    failure: str | None = None  # "timeout" | "unreachable"


@dataclass
class _Route:
    kind: Kind
    namespace: str | None
    name: str | None
    subresource: str | None


def _answer(
    code: int, body: str | dict[str, Any], content_type: str = "application/json", gzipped: bool = False
) -> httpx.Response:
    """A response whose body is a stream, as from a socket: httpx reads it, closes it and sets `elapsed`
    (a response built with `json=`/`text=` is already read, and `Cluster` would fail on `elapsed`)."""
    data = (json.dumps(body) if isinstance(body, dict) else body).encode()
    headers = {"Content-Type": content_type}
    if gzipped:
        data = gzip.compress(data)
        headers["Content-Encoding"] = "gzip"
    headers["Content-Length"] = str(len(data))
    return httpx.Response(code, headers=headers, stream=httpx.ByteStream(data))


def failure(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    """A `Status` object of failure, as the API server writes it."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def _status(code: int, reason: str, message: str, **details: Any) -> httpx.Response:
    return _answer(code, failure(code, reason, message, **details))


@dataclass
class FakeApiServer:
    """Objects by (kind, namespace, name), canned responses by path, and a log of requests."""

    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    canned: dict[str, _Canned] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    resource_version: int = 1000
    changes: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    """(resourceVersion, ADDED/MODIFIED/DELETED, object) for every change made after `serve_changes()`."""
    recording: bool = False
    bookmarks: bool = True
    oldest_change: int = 0
    """A watch from a resourceVersion older than this is answered 410 Gone (history compacted)."""
    watch_status: int = 200
    """Anything else: every watch is answered with this status (403: an identity that may list but not watch)."""
    cut_next_watch: set[str] = field(default_factory=set)
    """Paths whose next watch ends after its first event, with no bookmark: as the API server ends a watch at its
    timeout, or drops a watcher too slow to drain, before it has sent everything."""
    gzip_lists: bool = False
    """Every LIST answered gzip'd to a client that accepts it, as the API server answers a large one."""

    def serve_changes(self) -> FakeApiServer:
        """From now on every `add` and `remove` is a change a watch can follow."""
        self.recording = True
        return self

    def forget_changes_before(self, resource_version: int) -> None:
        self.oldest_change = resource_version

    # -- content ------------------------------------------------------------------------------------

    def add(self, *objs: dict[str, Any]) -> FakeApiServer:
        """Hold `objs` (each must carry `kind`, as captured fixtures do)."""
        for obj in objs:
            kind = KINDS.get(str(obj.get("kind")))
            if kind is None:
                raise ValueError(f"fake API server: object without a known kind: {obj.get('kind')!r}")
            metadata = obj.get("metadata") or {}
            namespace = metadata.get("namespace", "") if kind.namespaced else ""
            if kind.namespaced and not namespace:
                raise ValueError(f"fake API server: namespaced {kind.kind} {metadata.get('name')!r} without namespace")
            key = (kind.kind, namespace, metadata["name"])
            self._record("MODIFIED" if key in self.objects else "ADDED", obj)
            self.objects[key] = obj
        return self

    def _record(self, change: str, obj: dict[str, Any]) -> None:
        if not self.recording:
            return
        self.resource_version += 1
        stamped = {**obj, "metadata": {**(obj.get("metadata") or {}), "resourceVersion": str(self.resource_version)}}
        self.changes.append((self.resource_version, change, stamped))

    def add_all(self, objs: Iterable[dict[str, Any]]) -> FakeApiServer:
        return self.add(*objs)

    def remove(self, kind: Kind, name: str, namespace: str = "") -> None:
        gone = self.objects.pop((kind.kind, namespace, name), None)
        if gone is not None:
            self._record("DELETED", gone)

    def load(self, directory: Path) -> FakeApiServer:
        """Every `*.json` object under `directory` (e.g. a captured state)."""
        for path in sorted(directory.rglob("*.json")):
            self.add(json.loads(path.read_text()))
        return self

    def respond(
        self, path: str, status: int, body: str | dict[str, Any] = "", content_type: str = "text/plain; charset=utf-8"
    ) -> FakeApiServer:
        """Answer GET `path` (any query) with `status` and `body`; a dict body is sent as JSON."""
        if isinstance(body, dict):
            self.canned[path] = _Canned(status, json.dumps(body), "application/json")
        else:
            self.canned[path] = _Canned(status, body, content_type)
        return self

    def hang(self, path: str) -> FakeApiServer:
        """Requests to `path` time out (httpx.ReadTimeout, as a server that never answers)."""
        self.canned[path] = _Canned(0, "", "", failure="timeout")
        return self

    def unreachable(self, path: str) -> FakeApiServer:
        """Requests to `path` cannot connect (httpx.ConnectError)."""
        self.canned[path] = _Canned(0, "", "", failure="unreachable")
        return self

    # -- serving ------------------------------------------------------------------------------------

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        query = tuple(request.url.params.multi_items())
        self.requests.append(Recorded(request.method, path, query, request.headers.get("accept", "")))
        canned = self.canned.get(path)
        if canned is not None:
            if canned.failure == "timeout":
                raise httpx.ReadTimeout("timed out", request=request)
            if canned.failure == "unreachable":
                raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
            return _answer(canned.status, canned.body, canned.content_type)
        if request.method != "GET":
            return _status(405, "MethodNotAllowed", f"the fake API server is read-only ({request.method})")
        route = _route(path)
        if route is None or route.subresource:
            return _status(404, "NotFound", "the server could not find the requested resource")
        if route.name is None:
            return self._list(route, request)
        obj = self.objects.get((route.kind.kind, route.namespace or "", route.name))
        if obj is None:
            return _status(
                404,
                "NotFound",
                f'{route.kind.plural} "{route.name}" not found',
                name=route.name,
                kind=route.kind.plural,
            )
        return _answer(200, obj)

    def _list(self, route: _Route, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        items = [
            o
            for (kind, ns, _), o in self.objects.items()
            if kind == route.kind.kind and (route.namespace is None or ns == route.namespace)
        ]
        if params.get("watch") in ("1", "true"):
            return self._watch(route, request)
        filtered = self._filter(route, request, items)
        if isinstance(filtered, httpx.Response):
            return filtered
        items = filtered
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        offset = 0
        token = params.get("continue")
        if token:
            try:
                state = json.loads(base64.urlsafe_b64decode(token.encode()))
                offset = int(state["start"])
                if state["rv"] != self.resource_version:
                    raise ValueError("stale")
            except (ValueError, KeyError, TypeError):
                return _status(
                    410, "Expired", "The provided continue parameter is too old to display a consistent list result."
                )
        limit = int(params.get("limit", "0") or 0)
        page = items[offset : offset + limit] if limit else items[offset:]
        metadata: dict[str, Any] = {"resourceVersion": str(self.resource_version)}
        end = offset + len(page)
        if limit and end < len(items):
            metadata["continue"] = base64.urlsafe_b64encode(
                json.dumps({"start": end, "rv": self.resource_version}).encode()
            ).decode()
            metadata["remainingItemCount"] = len(items) - end
        if "as=PartialObjectMetadataList" in request.headers.get("accept", ""):
            body_items: list[dict[str, Any]] = [
                {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}
                for o in page
            ]
            return _answer(
                200,
                {
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": metadata,
                    "items": body_items,
                },
            )
        keep_kind = route.kind.group in _CUSTOM_GROUPS
        body_items = [o if keep_kind else {k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in page]
        return _answer(
            200,
            {
                "kind": f"{route.kind.kind}List",
                "apiVersion": route.kind.api_version,
                "metadata": metadata,
                "items": body_items,
            },
            gzipped=self.gzip_lists and "gzip" in request.headers.get("accept-encoding", ""),
        )

    def _watch(self, route: _Route, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        if self.watch_status != 200:
            return _status(
                self.watch_status,
                "Forbidden" if self.watch_status == 403 else "Error",
                f"watch answered {self.watch_status} by the fake",
            )
        since = int(params.get("resourceVersion", "0") or 0)
        if since < self.oldest_change:
            status = failure(410, "Expired", f"too old resource version: {since} ({self.oldest_change})")
            return _answer(200, json.dumps({"type": "ERROR", "object": status}) + "\n")
        matching: list[dict[str, Any]] = []
        for version, change, obj in self.changes:
            if version <= since or obj.get("kind") != route.kind.kind:
                continue
            if route.namespace is not None and (obj.get("metadata") or {}).get("namespace") != route.namespace:
                continue
            matching.append(obj)
            kept = self._filter(route, request, [obj])
            if isinstance(kept, httpx.Response):
                return kept
            if kept:
                matching[-1] = {"type": change, "object": obj}
            else:
                matching.pop()
        lines = [json.dumps(event) for event in matching]
        if request.url.path in self.cut_next_watch:
            self.cut_next_watch.discard(request.url.path)
            return _answer(200, "".join(line + "\n" for line in lines[:1]))
        if self.bookmarks and params.get("allowWatchBookmarks") == "true":
            lines.append(
                json.dumps(
                    {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": route.kind.kind,
                            "apiVersion": route.kind.api_version,
                            "metadata": {"resourceVersion": str(self.resource_version)},
                        },
                    }
                )
            )
        return _answer(200, "".join(line + "\n" for line in lines))

    def _filter(
        self, route: _Route, request: httpx.Request, items: list[dict[str, Any]]
    ) -> list[dict[str, Any]] | httpx.Response:
        """`items` that match the request's selectors (a 400 for one the API server would refuse)."""
        params = request.url.params
        try:
            selector = parse_label_selector(params.get("labelSelector", ""))
        except ValueError as error:
            return _status(400, "BadRequest", f"unable to parse requirement: {error}")
        items = [o for o in items if selector.matches((o.get("metadata") or {}).get("labels") or {})]
        for requirement in filter(None, params.get("fieldSelector", "").split(",")):
            negate = "!=" in requirement
            key, _, value = requirement.partition("!=" if negate else "==" if "==" in requirement else "=")
            getter = _FIELDS.get(key.strip()) or _KIND_FIELDS.get(route.kind.kind, {}).get(key.strip())
            if getter is None:
                return _status(
                    400,
                    "BadRequest",
                    f'"{key.strip()}" is not a known field selector: only "metadata.name", "metadata.namespace"',
                )
            items = [o for o in items if (getter(o) == value.strip()) is not negate]
        return items


def _route(path: str) -> _Route | None:
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace: str | None = None
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return None
    kind = _BY_PATH.get((group, version, rest[0]))
    if kind is None or (namespace is not None and not kind.namespaced):
        return None
    return _Route(kind, namespace, rest[1] if len(rest) > 1 else None, "/".join(rest[2:]) or None)


def fake_cluster(
    api: FakeApiServer, *, name: str = "fake", page_size: int = 500, deadline: Deadline | None = None
) -> Cluster:
    """The real `Cluster`, talking to `api` through `httpx.MockTransport`."""
    # Each fake is a cluster of its own: what a warm instance kept from one is never followed on another.
    return Cluster(
        name,
        SERVER,
        verify=ssl.create_default_context(),
        transport=httpx.MockTransport(api.handler),
        page_size=page_size,
        deadline=deadline,
        credential=f"fake-{id(api)}",
    )
