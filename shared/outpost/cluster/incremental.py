"""Reading a collection incrementally: a warm instance follows the changes instead of listing everything again.

The first run LISTs and keeps the reduced records and resourceVersion (`outpost.cluster.warm`); later runs watch
from there with bookmarks up to a consistent-read target, so the records judged equal a LIST at that version.
Fail closed: any doubt (410, an ERROR event, a broken or stalled stream, odd resourceVersions, a 403) relists,
and a collection that costs more to follow than to list is listed for a while. docs/contracts.md "Incremental
reads" has the protocol, the fallbacks and the costs, with their upstream citations (k8s.io/apiserver@v0.37.2).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from outpost.cluster import warm
from outpost.cluster.client import METADATA_ONLY, Cluster, WatchBroken, WatchStream, loads_json
from outpost.errors import MalformedResponse
from outpost.kube.objects import KubeObject, parse

if TYPE_CHECKING:  # msgspec is imported by the first LIST that decodes into a mirror, never by this module
    from outpost.kube.fast_outlines import FastKubeObject

V = TypeVar("V", bound=KubeObject)
R = TypeVar("R")

WATCH_TIMEOUT_SECONDS = 3
"""The watch's `timeoutSeconds`: the smallest that brings a bookmark (sent 2 s before the timeout)."""
LIST_ONLY_RUNS = 10
"""Runs a collection is LISTed after a watch that cost more than a LIST or could not catch up."""


def keep_view(view: V, where: str) -> V:
    """The reducer that keeps the view itself (it already holds only what is judged), without `kind` and
    `apiVersion`: a watch event's object carries them, a LIST item of a built-in kind does not, and a followed
    record must equal a listed one."""
    return view.model_copy(update={"kind": "", "api_version": ""}) if view.kind or view.api_version else view


@dataclass(frozen=True)
class Collection(Generic[V, R]):
    """A collection a check reads, how each object is reduced, and whether it can be followed."""

    path: str
    model: type[V]
    reduce: Callable[[V, str], R]
    label_selector: str | None = None
    field_selector: str | None = None
    page_size: int | None = None
    follow: bool = True
    """False where the API server keeps no watch cache, so no bookmark can say a watch is complete (Events:
    k8s.io/kubernetes@v1.37.2 pkg/kubeapiserver/default_storage_factory_builder.go `DefaultWatchCacheSizes`
    sets events to 0): always LISTed."""

    @property
    def key(self) -> Hashable:
        return (
            "collection",
            self.path,
            self.label_selector,
            self.field_selector,
            f"{self.model.__module__}.{self.model.__qualname__}",
            f"{self.reduce.__module__}.{self.reduce.__qualname__}",
        )

    def selectors(self) -> list[tuple[str, str]]:
        params = []
        if self.label_selector:
            params.append(("labelSelector", self.label_selector))
        if self.field_selector:
            params.append(("fieldSelector", self.field_selector))
        return params


@dataclass
class _Kept(Generic[R]):
    resource_version: int
    records: dict[str, R]
    list_decoded_bytes: int
    """The last LIST's bytes as decoded (a gzip'd LIST is parsed whole): what following must not exceed."""
    runs: int = 0
    list_only_until: int = 0
    why_list_only: str = ""
    costly_watches: int = 0
    """Catch-ups in a row that received more bytes than the last LIST decoded."""


@dataclass
class _Plan(Generic[R]):
    """How one collection is read this run: followed from `kept` to `target` over `stream`, or LISTed for `why`."""

    kept: _Kept[R] | None
    why: str = ""
    target: int | None = None
    stream: WatchStream | None = None
    target_bytes: int = 0
    """Bytes the target's LIST received."""
    follows: bool = True
    """False: this instance never follows the collection, so nothing is kept of it."""


def read_collection(cluster: Cluster, collection: Collection[V, R]) -> list[R]:
    """Every object of `collection` reduced, in namespace/name order: followed from the kept state when it can
    be, read in full otherwise (see the module's docstring for when and why)."""
    records: list[R] = read_collections(cluster, collection)[0]
    return records


R1 = TypeVar("R1")
R2 = TypeVar("R2")


@overload
def read_collections(cluster: Cluster, first: Collection[Any, R1], /) -> tuple[list[R1]]: ...


@overload
def read_collections(
    cluster: Cluster, first: Collection[Any, R1], second: Collection[Any, R2], /
) -> tuple[list[R1], list[R2]]: ...


def read_collections(cluster: Cluster, *collections: Collection[Any, Any]) -> tuple[list[Any], ...]:
    """`read_collection` of each, with the watches of those that are followed open at once: the API server
    schedules each bookmark from when its own watch opened, so a check that follows two collections waits for
    the bookmarks about as long as for one. A watch left unread while another is followed may be ended by the
    server before it reaches the target (its timeout; a watcher too slow to drain): it is watched once more, read
    at once, before it is relisted. Any exception loses what is kept of all of them (the next run lists them)."""
    with contextlib.ExitStack() as streams:
        plans = [_plan(cluster, collection, streams) for collection in collections]
        side_by_side = sum(plan.stream is not None for plan in plans) > 1
        return tuple(
            _read(cluster, collection, plan, streams, side_by_side)
            for collection, plan in zip(collections, plans, strict=True)
        )


def _plan(cluster: Cluster, collection: Collection[V, R], streams: contextlib.ExitStack) -> _Plan[R]:
    """Decide how `collection` is read; to follow it, learn the target and open the watch."""
    if not (cluster.incremental and collection.follow):
        why = "incremental reads off" if not cluster.incremental else "not followed (no watch cache)"
        return _Plan(None, why, follows=False)
    kept: _Kept[R] | None = warm.recall(cluster.identity, collection.key, cluster.incremental_max_age_seconds)
    if kept is None:
        return _Plan(None, "nothing kept (cold start, or older than cluster.incremental_max_age_seconds)")
    if kept.runs < kept.list_only_until:
        kept.runs += 1
        return _Plan(kept, kept.why_list_only)
    where = f"WATCH {collection.path} on cluster {cluster.name}"
    try:
        before = cluster.received_bytes
        target = _current_version(cluster, collection)
        kept.runs += 1
        if target < kept.resource_version:
            raise WatchBroken(
                f"{where}: the resourceVersion went back from {kept.resource_version} to {target} "
                "(etcd restored from a backup, or another cluster at this address)",
                gone=True,
            )
        stream = _open_watch(cluster, collection, kept, streams) if target > kept.resource_version else None
        return _Plan(kept, target=target, stream=stream, target_bytes=cluster.received_bytes - before)
    except WatchBroken as broken:
        return _Plan(kept, _give_up_following(kept, broken))
    except BaseException:
        warm.drop(cluster.identity, collection.key)  # never trusted again
        raise


def _open_watch(
    cluster: Cluster, collection: Collection[V, R], kept: _Kept[R], streams: contextlib.ExitStack
) -> WatchStream:
    params = [
        ("watch", "1"),
        ("resourceVersion", str(kept.resource_version)),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", str(WATCH_TIMEOUT_SECONDS)),
        *collection.selectors(),
    ]
    return cluster.open_watch(streams, collection.path, params, server_timeout_seconds=WATCH_TIMEOUT_SECONDS)


def _give_up_following(kept: _Kept[R], broken: WatchBroken) -> str:
    """Why this run LISTs; unless the state was merely stale, LIST for the next runs too."""
    if not broken.gone:  # stale state is no reason to stop following: the LIST re-anchors it
        kept.list_only_until = kept.runs + (10 if broken.forbidden else 1) * LIST_ONLY_RUNS
        kept.why_list_only = f"listing after a watch that could not catch up ({broken})"
    return f"the watch could not catch up: {broken}"


def _read(
    cluster: Cluster, collection: Collection[V, R], plan: _Plan[R], streams: contextlib.ExitStack, side_by_side: bool
) -> list[R]:
    why = plan.why
    if (kept := plan.kept) is not None and (target := plan.target) is not None:
        try:
            try:
                return _catch_up(cluster, collection, kept, target, plan.stream, plan.target_bytes)
            except WatchBroken as broken:
                if not side_by_side or plan.stream is None or broken.gone or broken.forbidden:
                    raise
                # Left unread while another watch was followed, it may have been ended by the server (its timeout,
                # or a watcher too slow to drain) before it reached the target: once more, from the version the
                # events applied so far reached, read at once.
                again = _open_watch(cluster, collection, kept, streams)
                return _catch_up(cluster, collection, kept, target, again, plan.target_bytes + plan.stream.counted)
        except WatchBroken as broken:
            why = _give_up_following(kept, broken)
        except BaseException:
            warm.drop(cluster.identity, collection.key)  # half-applied: never trusted again
            raise
    fresh = _relist(cluster, collection, why)
    if not plan.follows:
        return _sorted(fresh.records)
    if (kept := plan.kept) is not None:
        fresh.runs, fresh.list_only_until, fresh.why_list_only = kept.runs, kept.list_only_until, kept.why_list_only
        fresh.costly_watches = kept.costly_watches
    _anchor(cluster, collection, fresh)
    return _sorted(fresh.records)


def _sorted(records: dict[str, R]) -> list[R]:
    return [records[key] for key in sorted(records)]


def _object_key(view: KubeObject | FastKubeObject, where: str) -> str:
    if not view.metadata.name:
        raise MalformedResponse(f"{where}: an object without metadata.name")
    return f"{view.metadata.namespace}/{view.metadata.name}"


def _relist(cluster: Cluster, collection: Collection[V, R], why: str) -> _Kept[R]:
    """The whole collection by paginated LIST, reduced, with the LIST's resourceVersion (0: none usable)."""
    where = f"LIST {collection.path} on cluster {cluster.name}"
    before, decoded_before = cluster.received_bytes, cluster.decoded_bytes
    records: dict[str, R] = {}
    version_text = ""
    for number, page in enumerate(
        cluster.iter_pages_as(
            collection.model,
            collection.path,
            label_selector=collection.label_selector,
            field_selector=collection.field_selector,
            page_size=collection.page_size,
        )
    ):
        if number == 0:
            version_text = page.metadata.resource_version
        for view in page.items:
            records[_object_key(view, where)] = collection.reduce(view, where)
    received = cluster.received_bytes - before
    cluster.reads[collection.path] = f"list, {len(records)} objects, {received} B: {why}"
    version = _version(version_text)
    if version is None and version_text:
        cluster.reads[collection.path] += f"; not kept (resourceVersion {version_text[:40]!r} is not a number)"
    return _Kept(version or 0, records, cluster.decoded_bytes - decoded_before)


def _anchor(cluster: Cluster, collection: Collection[V, R], fresh: _Kept[R]) -> None:
    """Keep what a LIST read, for the next run to follow; a LIST without a usable resourceVersion is not kept."""
    if fresh.resource_version:
        warm.keep(cluster.identity, collection.key, fresh)
    else:
        warm.drop(cluster.identity, collection.key)


def _version(text: str) -> int | None:
    """A resourceVersion as the number every etcd-backed API server gives (the watch cache itself parses it so,
    storage.APIObjectVersioner); anything else is None, and is never followed."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 20 else None


NO_OBJECT = "metadata.name=-"
"""A field selector no object matches ("-" is no valid name) that names one key: the API server answers it with a
single-key read (k8s.io/apiserver@v0.37.2 pkg/registry/generic/registry/store.go `ListPredicate`, `MatchesSingle`),
an empty list and its current resourceVersion."""


def _current_version(cluster: Cluster, collection: Collection[V, R]) -> int:
    """The collection's resourceVersion now: a LIST without a resourceVersion is a consistent read, so its answer is
    at least every write made before it; selecting no object keeps it about a hundred bytes."""
    where = f"LIST {collection.path} on cluster {cluster.name}"
    body = cluster.get_json(collection.path, [("fieldSelector", NO_OBJECT)], accept=METADATA_ONLY)
    metadata = body.get("metadata")
    text = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
    version = _version(text) if isinstance(text, str) else None
    if version is None:
        raise WatchBroken(f"{where}: no numeric resourceVersion ({str(text)[:40]!r})")
    return version


class _Event(BaseModel, Generic[V]):
    """One watch event; `object` is the view, or a mapping when it does not fit one (an ERROR's Status, or a
    malformed object, which `parse` then names)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]
    object: Annotated[V | dict[str, Any], Field(union_mode="left_to_right")]


@functools.cache
def _event_adapter(model: type[KubeObject]) -> TypeAdapter[_Event[Any]]:
    return TypeAdapter(_Event[model])  # type: ignore[valid-type]


_Decoded = tuple[str, "KubeObject | FastKubeObject"]


def _event_decoder(model: type[V], where: str) -> Callable[[bytes], _Decoded]:
    """Decodes one event line into its type and object. A view with a msgspec mirror is decoded into the mirror
    (1.4-3.4x less CPU an event than the view); an event the mirror refuses (ERROR, a lenient or a
    malformed value) is decoded by the view, which reads it as it always did or names what is wrong. An ERROR event
    is `WatchBroken` (`gone` for 410: the next run follows again)."""
    from outpost.kube.fast_outlines import Refused, event_decoder  # msgspec: loaded by the first LIST

    fast = event_decoder(model)
    adapter = _event_adapter(model)

    def decode(line: bytes) -> _Decoded:
        if fast is not None:
            try:
                event = fast.decode(line)
                return event.type, event.object
            except Refused:
                pass  # the view decides
        try:
            viewed = adapter.validate_json(line)
        except ValidationError:
            raise _malformed_event(line, where) from None
        if viewed.type == "ERROR":  # 410 Gone (too old a resourceVersion) and the like: a LIST re-anchors
            body = loads_json(line, where)
            status = body.get("object") if isinstance(body, dict) else None
            code = status.get("code") if isinstance(status, dict) else None
            raise WatchBroken(f"{where}: {_status_text(status)}", gone=code == 410)
        if not isinstance(viewed.object, KubeObject):
            parse(model, viewed.object, where)  # raises MalformedResponse naming the object and the field
            raise MalformedResponse(f"{where}: an event whose object does not fit")
        return viewed.type, viewed.object

    return decode


def _catch_up(
    cluster: Cluster,
    collection: Collection[V, R],
    kept: _Kept[R],
    target: int,
    stream: WatchStream | None,
    earlier_bytes: int,
) -> list[R]:
    """Apply `stream`'s events to `kept` until `target` (None: already there); `earlier_bytes` is what this run
    spent on the collection before `stream` (the target's LIST, a watch cut short)."""
    where = f"WATCH {collection.path} on cluster {cluster.name}"
    started_with = kept.resource_version
    changes = 0
    watched_bytes = 0
    if stream is not None:
        decode = _event_decoder(collection.model, where)

        def apply(line: bytes) -> bool:
            nonlocal changes
            kind, view = decode(line)
            version = _version(view.metadata.resource_version)
            if version is None or version < kept.resource_version:
                raise WatchBroken(
                    f"{where}: event resourceVersion {view.metadata.resource_version[:40]!r} "
                    f"after {kept.resource_version}"
                )
            if kind in ("ADDED", "MODIFIED"):
                kept.records[_object_key(view, where)] = collection.reduce(cast(V, view), where)
                changes += 1
            elif kind == "DELETED":
                kept.records.pop(_object_key(view, where), None)
                changes += 1
            kept.resource_version = version
            return version >= target

        caught_up = cluster.follow(stream, apply, max_bytes=cluster.max_response_bytes)
        watched_bytes = stream.counted
        if not caught_up:
            raise WatchBroken(
                f"{where}: the watch ended at resourceVersion {kept.resource_version} before "
                f"reaching {target} (no bookmark)"
            )
    received = earlier_bytes + watched_bytes
    cluster.reads[collection.path] = (
        f"watch, {changes} changes from resourceVersion {started_with} to {kept.resource_version}, {received} B"
    )
    kept.costly_watches = kept.costly_watches + 1 if received > kept.list_decoded_bytes > 0 else 0
    if kept.costly_watches >= 2:
        # Following cost more than listing would have, twice in a row: LIST for a while, then follow again.
        kept.costly_watches = 0
        kept.list_only_until = kept.runs + LIST_ONLY_RUNS
        kept.why_list_only = (
            f"listing: two watches in a row received more than a LIST's {kept.list_decoded_bytes} B "
            f"decoded (the last {received} B): the collection changes faster than it is read"
        )
    warm.keep(cluster.identity, collection.key, kept)
    return _sorted(kept.records)


def _status_text(raw: object) -> str:
    """What an ERROR event's Status says: `410 Expired: too old resource version: 5 (2599)`."""
    if not isinstance(raw, dict):
        return "an ERROR event"
    code, reason, message = raw.get("code"), raw.get("reason"), raw.get("message")
    text = " ".join(str(part) for part in (code, reason) if part)
    if isinstance(message, str):
        text += f": {message.splitlines()[0][:200]}" if message else ""
    return f"ERROR event {text}".strip()


def _malformed_event(line: bytes, where: str) -> MalformedResponse:
    body = loads_json(line, where)  # not JSON, or too deep: named as such
    if not isinstance(body, dict):
        return MalformedResponse(f"{where}: an event that is not a JSON object")
    kind = body.get("type")
    return MalformedResponse(
        f"{where}: an event of type {str(kind)[:40]!r} without an object "
        "(want ADDED, MODIFIED, DELETED, BOOKMARK or ERROR with an object)"
    )
