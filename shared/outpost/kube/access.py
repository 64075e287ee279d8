"""What a check asks of the API server, in RBAC's own terms: the vocabulary of `CheckSpec.access`.

Attributes are the ones the API server's authorizer sees (`RequestInfo`: a proxy request's name is the whole
segment, `https:NAME:PORT`), and `of_path` derives them from the very path a check requests, so `outpost.tooling.rbac`
grants exactly what is read. Paths `system:public-info-viewer` already grants are marked `public` (granting them
again changes nothing); `when` marks requests made only in some situations, which a healthy cluster may not
exercise. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from outpost.kube.paths import Kind, Scheme, proxy_target

Verb = Literal["get", "list", "watch", "create", "patch"]

_PUBLIC_PATHS = ("/healthz", "/livez", "/readyz", "/version")
"""Granted to system:authenticated and system:unauthenticated by the bootstrap ClusterRole
`system:public-info-viewer` (kube-apiserver's default RBAC)."""


@dataclass(frozen=True, order=True)
class ResourceAccess:
    """One verb on one resource (or subresource, `pods/status`), cluster-wide or in one namespace."""

    group: str
    resource: str
    verb: Verb
    namespace: str | None = None
    """None: every namespace (or a cluster-scoped resource)."""
    names: tuple[str, ...] = ()
    """The object names asked for; empty: any (a LIST, or a name only known at run time)."""
    when: str = ""
    """Empty: every run sends it. Otherwise the situation in which it is sent."""

    def describe(self) -> str:
        what = f"{self.group}/{self.resource}" if self.group else self.resource
        where = f" in {self.namespace}" if self.namespace else ""
        names = f" {','.join(self.names)}" if self.names else ""
        return f"{self.verb} {what}{names}{where}"


@dataclass(frozen=True, order=True)
class NonResourceAccess:
    """A GET of a URL that is no resource (`/metrics`)."""

    path: str
    when: str = ""

    @property
    def public(self) -> bool:
        """Granted to every identity by the bootstrap role system:public-info-viewer."""
        return any(self.path == p or self.path.startswith(p + "/") for p in _PUBLIC_PATHS)

    def describe(self) -> str:
        return f"get {self.path}"


Access = ResourceAccess | NonResourceAccess


def get(kind: Kind, name: str | None = None, namespace: str | None = None, *, when: str = "") -> ResourceAccess:
    """GET of one object of `kind` (by `name` if known; any name otherwise)."""
    return ResourceAccess(
        kind.group, kind.plural, "get", namespace if kind.namespaced else None, (name,) if name else (), when
    )


def list_(kind: Kind, namespace: str | None = None, *, when: str = "") -> ResourceAccess:
    """LIST of `kind` in `namespace` (None: across all namespaces)."""
    return ResourceAccess(kind.group, kind.plural, "list", namespace if kind.namespaced else None, (), when)


FOLLOWED = "a warm instance follows the collection (outpost.cluster.incremental; without it, every run lists it)"


def watch(kind: Kind, namespace: str | None = None, *, when: str = FOLLOWED) -> ResourceAccess:
    """WATCH of `kind` in `namespace`: a warm instance following what it listed."""
    return ResourceAccess(kind.group, kind.plural, "watch", namespace if kind.namespaced else None, (), when)


def create(kind: Kind, namespace: str | None = None, *, when: str = "") -> ResourceAccess:
    return ResourceAccess(kind.group, kind.plural, "create", namespace if kind.namespaced else None, (), when)


def patch(kind: Kind, subresource: str, namespace: str | None = None, *, when: str = "") -> ResourceAccess:
    return ResourceAccess(
        kind.group, f"{kind.plural}/{subresource}", "patch", namespace if kind.namespaced else None, (), when
    )


def service_proxy(
    namespace: str, name: str, port: int | str | None = None, scheme: Scheme | None = None, *, when: str = ""
) -> ResourceAccess:
    """GET through the service proxy: RBAC names the Service as the path does (`https:NAME:PORT`)."""
    return ResourceAccess("", "services/proxy", "get", namespace, (proxy_target(name, port, scheme),), when)


def pod_proxy(namespace: str, *, when: str = "") -> ResourceAccess:
    """GET through the pod proxy to pods found at run time (generated names): the namespace only."""
    return ResourceAccess("", "pods/proxy", "get", namespace, (), when)


def node_proxy(*, when: str = "") -> ResourceAccess:
    """GET through the node proxy (reaches the kubelet API of any node: powerful)."""
    return ResourceAccess("", "nodes/proxy", "get", None, (), when)


def non_resource(path: str, *, when: str = "") -> NonResourceAccess:
    return NonResourceAccess(path.split("?", 1)[0], when)


_CORE = re.compile(r"^/api/(?P<version>[^/]+)(?P<rest>/.*)?$")
_GROUP = re.compile(r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)(?P<rest>/.*)?$")


def of_path(path: str, verb: Literal["get", "list"] = "get", *, when: str = "") -> Access:
    """The attributes of a GET of `path`, as the API server's RequestInfo derives them.

    `verb` says whether a collection path is a LIST (`list`) or not; an object path is always `get`; a collection
    path whose query asks `watch=1` (or `true`) is a WATCH.
    A path under /api or /apis that names no resource (`/api/v1`, discovery) is a non-resource URL.
    """
    bare = path.split("?", 1)[0]
    match = _CORE.match(bare)
    group = ""
    if match is None:
        match = _GROUP.match(bare)
        if match is None:
            return NonResourceAccess(bare, when)
        group = match["group"]
    parts = [p for p in (match["rest"] or "").split("/") if p]
    namespace: str | None = None
    if len(parts) >= 2 and parts[0] == "namespaces" and (len(parts) > 2):
        namespace, parts = parts[1], parts[2:]
    elif len(parts) == 2 and parts[0] == "namespaces":
        # /api/v1/namespaces/NAME: the Namespace object itself
        return ResourceAccess("", "namespaces", "get", None, (parts[1],), when)
    if not parts:
        return NonResourceAccess(bare, when)
    resource = parts[0]
    if len(parts) == 1:
        query = path.partition("?")[2]
        watching = any(pair in ("watch=1", "watch=true") for pair in query.split("&"))
        return ResourceAccess(group, resource, "watch" if watching else verb, namespace, (), when)
    name = parts[1]
    if len(parts) >= 3:
        resource = f"{resource}/{parts[2]}"
    return ResourceAccess(group, resource, "get", namespace, (name,), when)


def covered(request: Access, declared: Sequence[Access]) -> bool:
    """Whether `request` (one request's attributes, e.g. from `of_path`) is among `declared`: same verb and
    resource, in the declared namespace (or a cluster-wide declaration), of a declared name (or any)."""
    if isinstance(request, NonResourceAccess):
        return request.public or any(isinstance(d, NonResourceAccess) and d.path == request.path for d in declared)
    for item in declared:
        if not isinstance(item, ResourceAccess):
            continue
        if (item.group, item.resource, item.verb) != (request.group, request.resource, request.verb):
            continue
        if item.namespace is not None and item.namespace != request.namespace:
            continue
        if item.names and not set(request.names) <= set(item.names):
            continue
        if item.names and not request.names:
            continue
        return True
    return False
