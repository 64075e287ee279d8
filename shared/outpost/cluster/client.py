"""The one way Outpost talks to a Kubernetes API server.

Reads only (plus `dry_run_create`, always `dryRun=All`), https only with verification on, every request bounded
end to end by the run's one `Deadline` and every body counted against `max_response_bytes` and `max_run_bytes`,
so neither a slow server, a compression bomb nor endless pages can exhaust a function. Every failure is a
`ClusterError` naming cluster, path and cause, never a token; a refusal of our own request (411/413/414/415/431)
is `ClusterRequestRefused`, never the server's health. See docs/reliability.md.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import ssl
import sys
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypedDict, TypeVar, Unpack, cast

import httpx
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from outpost.bounded import GZIP, BodyRefused, ByteBudget, Closing, bounded_transport, read_body
from outpost.cluster.auth import build_credentials
from outpost.cluster.auth.credentials import Credentials, TokenSource
from outpost.cluster.deadline import Deadline
from outpost.cluster.tls import TlsProbe, probe_tls
from outpost.config import ClusterSettings
from outpost.errors import (
    AuthRefused,
    ClusterAuthError,
    ClusterError,
    ClusterRequestRefused,
    ClusterResponseError,
    ClusterTimeout,
    ClusterUnreachable,
    MalformedResponse,
    ResponseTooLarge,
)
from outpost.kube.objects import V, View, parse

JSON = "application/json"
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
USER_AGENT = "outpost/0.1 (+outside-in health checks)"
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""Per-response cap: a 256 MB function must not be taken down by one oversized (or hostile) answer."""
DEFAULT_MAX_RUN_BYTES = 256 * 1024 * 1024
"""Per-run budget of decoded body bytes, all requests and pages together (`cluster.max_run_bytes`)."""
MAX_LIST_PAGES = 10_000
"""Pages one LIST may take: at the default `limit` of 250, 2.5 million objects, 16x Kubernetes' documented
scalability threshold of 150,000 pods per cluster; a server that hands out `continue` tokens for ever (even
with empty pages, which cost the byte budget almost nothing) is stopped here."""
CONNECT_ATTEMPTS = 2
"""Tries of a connection that fails before its request is sent (`Cluster._connect_and_send`)."""
MAX_TOKEN_BYTES = 64 * 1024
"""The largest bearer token sent. Go's net/http server refuses request headers over DefaultMaxHeaderBytes,
1 MiB (src/net/http/server.go), and kube-apiserver sets the same 1 << 20 (k8s.io/apiserver@v0.37.2
pkg/server/secure_serving.go MaxHeaderBytes); proxies and load balancers in front of it often allow 8 to 64 KiB.
Real tokens are 1 to 4 KiB (ServiceAccount JWTs, EKS presigned URLs, OAuth2 access tokens), 8 KiB at most for
identity providers that put groups in them: 64 KiB is 16x that, and a bigger one is a misconfiguration (a file
or a whole kubeconfig pasted as a token) that must not go out as a huge header on every request."""
GO_JSON_MAX_DEPTH = 10_000
"""Go's encoding/json refuses JSON nested deeper than this (src/encoding/json/scanner.go maxNestingDepth), and
so does apimachinery's util/json (maxDepth, k8s.io/apimachinery@v0.37.2 pkg/util/json/json.go). Python's json
parser recurses once per level and stops far earlier, at the interpreter's recursion limit (1000): a body
deeper than that is a named `MalformedResponse`, never a RecursionError (`loads_json`)."""
REFUSED_STATUSES = {
    411: "Length Required",
    413: "Content Too Large",
    414: "URI Too Long",
    415: "Unsupported Media Type",
    431: "Request Header Fields Too Large",
}
"""Statuses by which a server (the API server, or a proxied target) refuses our own request for its framing,
size or media type: nothing about the server's health was observed, so they are `error` from every endpoint
(`ClusterRequestRefused`). 400 is not among them: the API server answers 400 for what it judged (an admission
webhook's denial, a bad selector) and its proxy for a target without an address, which checks judge."""

Query = Mapping[str, str | int] | Sequence[tuple[str, str | int]]
"""Query parameters; a sequence of pairs keeps repeated keys (e.g. several `exclude`)."""


class ListSelection(TypedDict, total=False):
    """Which items of a collection `Cluster.list` reads: `iter_list`'s keywords but the page size."""

    label_selector: str | None
    field_selector: str | None
    metadata_only: bool


@dataclass(frozen=True)
class Response:
    """A response a check may judge itself (e.g. a proxied health endpoint that answered 500).

    The body is kept as received (`content`); `text` is decoded on first use, so a LIST page validated straight
    from its bytes (`Cluster.iter_list_as`) is never held a second time as a string."""

    path: str
    status_code: int
    content: bytes
    headers: Mapping[str, str]
    elapsed_ms: int
    method: str = "GET"
    encoding: str = "utf-8"

    @functools.cached_property
    def text(self) -> str:
        try:
            return self.content.decode(self.encoding, errors="replace")
        except LookupError:  # a charset Python does not know: read it as UTF-8 rather than crash
            return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return loads_json(self.text, f"{self.method} {self.path}")


def loads_json(data: str | bytes, where: str) -> Any:
    """`data` parsed as JSON; a body that is not JSON, or is nested deeper than the parser can go, is
    `MalformedResponse` naming `where` (never a RecursionError, whatever the depth)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise MalformedResponse(
            f"{where}: JSON nested deeper than {sys.getrecursionlimit()} levels, the parser's "
            f"limit (Go's encoding/json stops at {GO_JSON_MAX_DEPTH})"
        ) from None
    except ValueError:
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        raise MalformedResponse(f"{where}: body is not JSON ({_preview(text)})") from None


def _loads_or_none(text: str) -> Any:
    """`text` as JSON, or None when it is not JSON or too deeply nested (for reading an error's reason)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _preview(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat[:limit] + ("…" if len(flat) > limit else ""))


class _BearerAuth(httpx.Auth):
    def __init__(self, token: TokenSource) -> None:
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self._token()
        if not token or any(c in token for c in "\r\n"):
            raise ClusterAuthError("the configured token is empty or not a single line")
        size = len(token.encode("utf-8", "replace"))
        if size > MAX_TOKEN_BYTES:
            # Refused before anything is sent: a header this large is a misconfiguration, and a server's 431
            # for it would read as the server's trouble. The size is named, never the token.
            raise ClusterAuthError(
                f"the bearer token is {size} bytes, more than the {MAX_TOKEN_BYTES} bytes Outpost "
                "sends (real tokens are a few KiB: is a file or a kubeconfig configured as the "
                "token?); nothing was sent"
            )
        if not (token.isascii() and token.isprintable()):
            raise ClusterAuthError(
                "the configured token has characters an HTTP header cannot carry (want visible ASCII); nothing was sent"
            )
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


class Cluster(Closing):
    """Read access to one cluster for one check run. Use as a context manager."""

    def __init__(
        self,
        name: str,
        server: str,
        *,
        verify: ssl.SSLContext,
        token: TokenSource | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 10.0,
        deadline: Deadline | None = None,
        page_size: int = 250,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_run_bytes: int = DEFAULT_MAX_RUN_BYTES,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        credential: str = "",
        incremental: bool = True,
        incremental_max_age_seconds: float = 900.0,
    ) -> None:
        self.name = name
        self.server = server.rstrip("/")
        self.identity = (name, self.server, credential)
        """Whom this client reads as, for what a warm instance keeps (`outpost.cluster.warm`): the cluster's name,
        its server and a digest of the auth settings (which may name a secret, never hold one)."""
        if not self.server.lower().startswith("https://"):
            # A bearer token or client certificate must never cross a network in clear text.
            scheme = self.server.partition("://")[0][:10] if "://" in self.server else "no scheme"
            raise ClusterAuthError(
                f"cluster {name}: the API server URL must be https:// (got {scheme}); "
                "Outpost never sends a credential over plain http"
            )
        self.deadline = deadline or Deadline(read_timeout * 4)
        self.page_size = page_size
        self.max_response_bytes = max_response_bytes
        self.budget = ByteBudget(max_run_bytes, "cluster.max_run_bytes")
        """Every body this Cluster reads (one per run) counts against it, decoded, as it arrives."""
        self.received_bytes = 0
        """Bytes received as the server sent them (compressed when it compressed them), every request of the run."""
        self.decoded_bytes = 0
        """The bodies of those requests (not watches) as decoded: the bytes parsed."""
        self.requests = 0
        self.incremental = incremental
        self.incremental_max_age_seconds = incremental_max_age_seconds
        self.reads: dict[str, str] = {}
        """How each collection was read this run (`outpost.cluster.incremental`), for the result's details."""
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._verify = verify  # kept for `tls_probe`, which must trust (and present) exactly what requests do
        self._client = httpx.Client(
            base_url=self.server,
            verify=verify,
            auth=_BearerAuth(token) if token is not None else None,
            # `headers` go with every request (e.g. Impersonate-User for a write identity that acts as
            # another subject); the bearer token is set per request by the auth flow, never here.
            # Accept-Encoding: gzip only, as Go's transport asks (and the one coding `read_body` decodes).
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": GZIP, **(headers or {})},
            transport=transport if transport is not None else bounded_transport(self.deadline, verify),
            follow_redirects=False,
            trust_env=False,
        )

    @classmethod
    def from_settings(cls, settings: ClusterSettings, deadline: Deadline | None = None) -> Cluster:
        deadline = deadline or Deadline(settings.deadline_seconds)
        credentials: Credentials = build_credentials(settings.auth, deadline)
        return cls(
            settings.name,
            credentials.server,
            verify=credentials.ssl_context,
            token=credentials.token,
            connect_timeout=settings.connect_timeout_seconds,
            read_timeout=settings.read_timeout_seconds,
            deadline=deadline,
            page_size=settings.page_size,
            max_response_bytes=settings.max_response_bytes,
            max_run_bytes=settings.max_run_bytes,
            credential=hashlib.sha256(settings.auth.model_dump_json().encode()).hexdigest()[:16],
            incremental=settings.incremental,
            incremental_max_age_seconds=settings.incremental_max_age_seconds,
        )

    def close(self) -> None:
        self._client.close()

    # -- requests --------------------------------------------------------------------------

    def tls_probe(self, *, read_unverified_chain: bool = False) -> TlsProbe:
        """TCP connect and verified TLS handshake to this cluster's API server, each timed, no request
        sent (`outpost.cluster.tls`): same address, trust, client certificate and deadline as requests."""
        return probe_tls(
            self.server, self._verify, self.deadline, self._connect_timeout, read_unverified_chain=read_unverified_chain
        )

    def get(
        self, path: str, params: Query | None = None, *, accept: str = JSON, timeout: float | None = None
    ) -> Response:
        """GET `path`; any HTTP status is returned except 401/403, which raise ClusterAuthError.

        Use for endpoints whose status code is itself the observation (health and proxy paths).
        `timeout` shortens (never lengthens) the read timeout for this request.
        """
        return self._send("GET", path, params, accept=accept, timeout=timeout)

    def dry_run_create(
        self, path: str, obj: dict[str, Any], *, timeout: float | None = None, server_timeout: int | None = None
    ) -> Response:
        """POST `obj` to the collection at `path` with `dryRun=All`, always: admitted, never persisted.

        The API server runs authentication, authorization and every admission webhook and answers with the object
        as it would be stored; the caller judges it (201 or the refusal). 401/403 for our identity raise
        `ClusterAuthError`; a 400/403 whose `Status` names a denying webhook is returned (the webhook speaking).
        `server_timeout` is sent as the `timeout` query parameter, which ends the request context and every
        webhook call (k8s.io/apiserver@v0.37.2 `pkg/endpoints/filters/request_deadline.go`; the create handler
        stops at 34 s regardless); `timeout`, our read timeout, may exceed the configured one (never the
        deadline) so the API server's own answer can be read.
        """
        params: list[tuple[str, str | int]] = [("dryRun", "All")]
        if server_timeout is not None:
            if server_timeout < 1:
                raise ValueError(f"server_timeout must be at least 1 s, got {server_timeout}")
            params.append(("timeout", f"{server_timeout}s"))
        body = json.dumps(obj, separators=(",", ":")).encode()
        return self._send(
            "POST",
            path,
            params,
            body=body,
            content_type=JSON,
            timeout=timeout,
            may_wait_longer=True,
            admission_denials=True,
        )

    def _connect_and_send(self, request: httpx.Request) -> httpx.Response:
        """Send `request`, streaming its answer. A connection that fails before the request is sent, in a way that may
        not recur (a reset or a TLS alert during the handshake of a busy server, not refused, DNS or certificate
        verification), is tried once more within the deadline: nothing reached the server, so nothing is repeated,
        and one lost handshake does not become a verdict."""
        for _ in range(CONNECT_ATTEMPTS - 1):
            try:
                return self._client.send(request, stream=True)
            except httpx.ConnectError as error:
                if not _transient(error) or self.deadline.expired:
                    raise
        return self._client.send(request, stream=True)

    def _send(
        self,
        method: str,
        path: str,
        params: Query | None = None,
        *,
        accept: str = JSON,
        timeout: float | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        may_wait_longer: bool = False,
        admission_denials: bool = False,
    ) -> Response:
        """The one request path of every verb: deadline, timeouts, size cap, error mapping, 401/403.

        Every other status is returned for the caller to judge; `ClusterWriter` adds its verbs on
        top of this method, so reads and writes share one set of guarantees. `timeout` shortens the
        read timeout, or with `may_wait_longer` replaces it; the deadline caps both.
        `admission_denials` returns a 403 that an admission webhook gave instead of raising.
        """
        where = f"{method} {path} on cluster {self.name}"
        if self.deadline.expired:
            raise ClusterTimeout(f"{where}: the check's deadline of {self.deadline.seconds:g} s ran out")
        if timeout and not may_wait_longer:
            timeout = min(timeout, self._read_timeout)
        read = self.deadline.cap(timeout or self._read_timeout)
        limits = httpx.Timeout(read, connect=self.deadline.cap(self._connect_timeout))
        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        started = time.monotonic()
        try:
            query = httpx.QueryParams(dict(params) if isinstance(params, Mapping) else list(params or []))
            request = self._client.build_request(
                method, path, params=query, headers=headers, content=body, timeout=limits
            )
            response = self._connect_and_send(request)
            try:
                self.requests += 1
                data = self._read_body(response, where)
                self.decoded_bytes += len(data)
            finally:
                self.received_bytes += response.num_bytes_downloaded
                response.close()
        except httpx.TimeoutException as error:
            if self.deadline.expired:
                raise ClusterTimeout(
                    f"{where}: the check's deadline of {self.deadline.seconds:g} s ran out ({_phase(error)})"
                ) from None
            kind = "connect" if isinstance(error, httpx.ConnectTimeout) else "read"
            budget = limits.connect if kind == "connect" else limits.read
            raise ClusterTimeout(f"{where}: {kind} timed out after {budget:.1f} s") from None
        except httpx.ConnectError as error:
            raise ClusterUnreachable(f"{where}: {_connect_cause(error)}") from None
        except httpx.TransportError as error:
            raise ClusterUnreachable(f"{where}: {type(error).__name__}: {_first_line(error)}") from None
        except httpx.HTTPError as error:  # InvalidURL and friends: the request could not even be made
            raise ClusterUnreachable(f"{where}: {type(error).__name__}: {_first_line(error)}") from None
        answer = Response(
            path=path,
            status_code=response.status_code,
            content=data,
            headers=dict(response.headers),
            elapsed_ms=int((time.monotonic() - started) * 1000),
            method=method,
            encoding=response.encoding or "utf-8",
        )
        if answer.status_code in REFUSED_STATUSES:
            code = answer.status_code
            raise ClusterRequestRefused(
                f"{where}: HTTP {code} {REFUSED_STATUSES[code]}: our own request was refused, "
                f"nothing observed {_text_reason(answer.text)}".rstrip(),
                code,
            )
        if answer.status_code in (401, 403) and not (admission_denials and admission_webhook_named(answer.text)):
            raise AuthRefused(f"{where}: HTTP {answer.status_code} {_text_reason(answer.text)}")
        return answer

    def _read_body(self, response: httpx.Response, where: str) -> bytes:
        """The body, decoded by us as it arrives (`outpost.bounded.read_body`): refused past
        `max_response_bytes` or the run's `max_run_bytes`, a refused content coding named, bounded by the deadline."""
        try:
            return read_body(
                response,
                cap=self.max_response_bytes,
                cap_setting="cluster.max_response_bytes",
                budget=self.budget,
                deadline=self.deadline,
            )
        except BodyRefused as refused:
            if refused.reason in ("response-cap", "run-budget"):
                raise ResponseTooLarge(f"{where}: {refused}") from None
            if refused.reason == "deadline":
                raise ClusterTimeout(
                    f"{where}: the check's deadline of {self.deadline.seconds:g} s ran out while reading the body"
                ) from None
            raise MalformedResponse(f"{where}: {refused}") from None

    def get_object(self, path: str) -> dict[str, Any] | None:
        """One object, or None when the API server answers 404.

        Absence is an observation ("the webhook configuration is gone"), for the check to judge;
        every other non-200 answer raises, like `get_json`.
        """
        response = self.get(path)
        if response.status_code == 404:
            return None
        return self._json_object(response)

    def get_json(self, path: str, params: Query | None = None, *, accept: str = JSON) -> dict[str, Any]:
        """GET a JSON object; anything but 200 with a JSON object body raises."""
        return self._json_object(self.get(path, params, accept=accept))

    def _expect_ok(self, response: Response, expected: tuple[int, ...] = (200,)) -> Response:
        """`response` when its status is expected; otherwise ClusterResponseError naming the status and reason."""
        if response.status_code not in expected:
            raise ClusterResponseError(
                f"{response.method} {response.path} on cluster {self.name}: "
                f"HTTP {response.status_code} {_text_reason(response.text)}",
                response.status_code,
            )
        return response

    def _json_object(self, response: Response, expected: tuple[int, ...] = (200,)) -> dict[str, Any]:
        """The JSON object body of `response`; an unexpected status or a non-object body raises."""
        body = self._expect_ok(response, expected).json()
        if not isinstance(body, dict):
            raise MalformedResponse(f"{response.method} {response.path} on cluster {self.name}: expected a JSON object")
        return body

    def list(self, path: str, **selection: Unpack[ListSelection]) -> list[dict[str, Any]]:
        """Every item of a collection, following `continue` tokens page by page (`iter_list`, all at once)."""
        return list(self.iter_list(path, **selection))

    def iter_list(
        self,
        path: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        page_size: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Items page by page; `page_size` overrides the cluster's `limit` for collections whose objects
        are large (a NodeMetric carries every pod's usage), so one page stays under the response cap."""
        params: dict[str, str | int] = {"limit": page_size or self.page_size}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        pages = 0
        while True:
            page = self.get_json(path, params, accept=METADATA_ONLY if metadata_only else JSON)
            pages += 1
            items = page.get("items")
            if not isinstance(items, list):
                raise MalformedResponse(f"LIST {path} on cluster {self.name}: response has no items list")
            yield from items
            metadata = page.get("metadata")
            token = metadata.get("continue") if isinstance(metadata, dict) else None
            if not token:
                return
            self._next_page(path, pages, params, str(token))

    def iter_list_as(
        self, model: type[V], path: str, *, label_selector: str | None = None, page_size: int | None = None
    ) -> Iterator[V]:
        """Items as `model` views, page by page, each page validated straight from its JSON bytes.

        Why: a view declares only the fields a check reads, and pydantic skips the rest while parsing, so the
        containers, images and managed fields of 5,000 objects are never built as Python objects (about 3x
        less CPU than decoding every page into dicts, and a page's memory is its bytes plus the views). A page
        that does not fit is `MalformedResponse` naming the object and the field, as `parse` would. A view with a
        msgspec mirror comes as its mirror (`iter_pages_as`).
        """
        for page in self.iter_pages_as(model, path, label_selector=label_selector, page_size=page_size):
            yield from page.items

    def iter_pages_as(
        self,
        model: type[V],
        path: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[Page[V]]:
        """The pages of a LIST as `model` views (see `iter_list_as`), each with its `metadata` (the list's
        resourceVersion is the first page's: every later page is served from the same snapshot).

        A view with a msgspec mirror (NodeOutline, PodOutline, NodeMetricOutline: `outpost.kube.fast_outlines`)
        is decoded into the mirror, 2-5x cheaper: the same fields and the properties its reducers read, but not a
        pydantic model. A page the mirror refuses is decoded by the view, so what the view accepts reads the same
        and what it refuses is the same `MalformedResponse`."""
        params: dict[str, str | int] = {"limit": page_size or self.page_size}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        from outpost.kube.fast_outlines import Refused, page_decoder  # msgspec: loaded by the first LIST

        fast = page_decoder(model)
        pages = 0
        while True:
            response = self._expect_ok(self.get(path, params))
            pages += 1
            page: Page[V] | None = None
            if fast is not None:
                try:
                    page = cast("Page[V]", fast.decode(response.content))  # the mirror stands in for the view
                except Refused:
                    page = None  # the view decides: its lenient reading, or its MalformedResponse
            if page is None:
                try:
                    page = _page_adapter(model).validate_json(response.content)
                except ValidationError as error:
                    raise self._malformed_page(model, response, error) from None
            yield page
            if not page.metadata.continue_:
                return
            self._next_page(path, pages, params, page.metadata.continue_)

    def _next_page(self, path: str, pages: int, params: dict[str, str | int], token: str) -> None:
        """Set `params` for the page after `pages` pages: refused past `MAX_LIST_PAGES`, or when the server hands
        back the token it was just given (a loop that would never end)."""
        where = f"LIST {path} on cluster {self.name}"
        if pages >= MAX_LIST_PAGES:
            raise ResponseTooLarge(
                f"{where}: more than {MAX_LIST_PAGES} pages of {params['limit']} (a continue "
                "token that never ends; raise cluster.page_size for a larger collection)"
            )
        if params.get("continue") == token:
            raise MalformedResponse(
                f"{where}: page {pages} hands back the continue token it was asked with (the list would never end)"
            )
        params["continue"] = token

    def open_watch(
        self,
        streams: contextlib.ExitStack,
        path: str,
        params: Sequence[tuple[str, str]],
        *,
        server_timeout_seconds: int,
    ) -> WatchStream:
        """Send a watch request and read its status, leaving its events unread until `follow`; the stream is
        closed with `streams`. Several watches opened before any is followed run side by side on the server:
        each bookmark is scheduled from when its own watch opened, so following them one after the other waits
        about as long as following one.

        For `outpost.cluster.incremental`, which relists on `WatchBroken`: a status other than 200 (403 included:
        an identity allowed to list but not to watch still gets the LIST), a content coding, a stream that breaks or
        goes silent, more than `max_bytes` of events or a line longer than `max_response_bytes`. What is never
        relisted around: 401 (`ClusterAuthError`), our own request refused (`ClusterRequestRefused`), the deadline
        (`ClusterTimeout`) and the run's byte budget (`ResponseTooLarge`). The stream is bounded like every request:
        each socket read by the deadline, every byte counted against the run's budget as it arrives.
        """
        where = f"WATCH {path} on cluster {self.name}"
        if self.deadline.expired:
            raise ClusterTimeout(f"{where}: the check's deadline of {self.deadline.seconds:g} s ran out")
        # The server ends the watch at `server_timeout_seconds`; silence longer than that (plus slack) is a stall.
        read = self.deadline.cap(server_timeout_seconds + 2.0)
        limits = httpx.Timeout(read, connect=self.deadline.cap(self._connect_timeout))
        with self._watch_errors(where, read):
            response = streams.enter_context(
                self._client.stream(
                    "GET", path, params=httpx.QueryParams(list(params)), headers={"Accept": JSON}, timeout=limits
                )
            )
            self.requests += 1
            stream = WatchStream(response, where, read)
            streams.callback(self._count_downloaded, stream)
            try:
                self._watch_status(response, where)
            finally:
                self._count_downloaded(stream)
        return stream

    def follow(self, stream: WatchStream, on_line: Callable[[bytes], bool], *, max_bytes: int) -> bool:
        """Hand each event line of an open watch to `on_line` until it returns True (True) or the server ends the
        stream (False); the errors are `open_watch`'s."""
        with self._watch_errors(stream.where, stream.read_timeout):
            try:
                return self._follow(stream.response, stream.where, on_line, max_bytes)
            finally:
                self._count_downloaded(stream)

    def _count_downloaded(self, stream: WatchStream) -> None:
        downloaded = stream.response.num_bytes_downloaded
        self.received_bytes += downloaded - stream.counted
        stream.counted = downloaded

    @contextlib.contextmanager
    def _watch_errors(self, where: str, read: float) -> Iterator[None]:
        try:
            yield
        except httpx.TimeoutException as error:
            if self.deadline.expired:
                raise ClusterTimeout(
                    f"{where}: the check's deadline of {self.deadline.seconds:g} s ran out ({_phase(error)})"
                ) from None
            raise WatchBroken(f"{where}: no event for {read:.1f} s") from None
        except httpx.HTTPError as error:
            raise WatchBroken(f"{where}: {type(error).__name__}: {_first_line(error)}") from None

    def _watch_status(self, response: httpx.Response, where: str) -> None:
        status = response.status_code
        if status != 200:
            text = self._read_body(response, where).decode("utf-8", "replace")
            if status in REFUSED_STATUSES:
                raise ClusterRequestRefused(
                    f"{where}: HTTP {status} {REFUSED_STATUSES[status]}: our own request was "
                    f"refused, nothing observed {_text_reason(text)}".rstrip(),
                    status,
                )
            if status == 401:
                raise AuthRefused(f"{where}: HTTP 401 {_text_reason(text)}")
            raise WatchBroken(f"{where}: HTTP {status} {_text_reason(text)}".rstrip(), forbidden=status == 403)
        coding = response.headers.get("Content-Encoding", "").strip().lower()
        if coding not in ("", "identity"):
            raise WatchBroken(f"{where}: content coding {coding[:40]!r} on a watch (a plain watch is never encoded)")

    def _follow(self, response: httpx.Response, where: str, on_line: Callable[[bytes], bool], max_bytes: int) -> bool:
        pending = bytearray()
        total = 0
        # An in-memory response (httpx.MockTransport's) was read whole already; a network one streams here.
        for chunk in [response.content] if response.is_stream_consumed else response.iter_raw():
            if self.deadline.expired:
                raise ClusterTimeout(
                    f"{where}: the check's deadline of {self.deadline.seconds:g} s ran out while following the watch"
                )
            total += len(chunk)
            if total > max_bytes:
                raise WatchBroken(f"{where}: more than {max_bytes} bytes of changes")
            if not self.budget.spend(len(chunk)):
                raise ResponseTooLarge(
                    f"{where}: the run has read more than its budget of {self.budget.total} bytes "
                    f"({self.budget.setting})"
                )
            pending += chunk
            start = 0
            while (end := pending.find(b"\n", start)) >= 0:
                line = bytes(pending[start:end])
                start = end + 1
                if line.strip() and on_line(line):
                    return True
            del pending[:start]
            if len(pending) > self.max_response_bytes:
                raise WatchBroken(
                    f"{where}: an event longer than {self.max_response_bytes} bytes (cluster.max_response_bytes)"
                )
        return False

    def _malformed_page(self, model: type[View], response: Response, error: ValidationError) -> MalformedResponse:
        """The error `parse` gives for the first bad item (decoding the page again only on this path)."""
        where = f"LIST {response.path} on cluster {self.name}"
        body = response.json()
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list):
            return MalformedResponse(f"{where}: response has no items list")
        for item in items:
            parse(model, item, where)  # raises MalformedResponse naming the object and the field
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(page)"
        return MalformedResponse(f"{where}: field {field}: {first['msg']}")


@dataclass
class WatchStream:
    """A watch request sent and its status read (`Cluster.open_watch`), its events not yet followed."""

    response: httpx.Response
    where: str
    read_timeout: float
    counted: int = 0
    """Bytes of it already added to `Cluster.received_bytes`."""


class WatchBroken(Exception):
    """A watch could not bring the caller up to date; the caller reads the collection in full instead."""

    def __init__(self, reason: str, *, forbidden: bool = False, gone: bool = False) -> None:
        super().__init__(reason)
        self.forbidden = forbidden
        self.gone = gone
        """410 Gone: the kept resourceVersion is older than the server's history; a LIST re-anchors, and the next
        run can follow again."""


class _ListMeta(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    continue_: str = Field("", alias="continue")
    resource_version: str = Field("", alias="resourceVersion")


V_co = TypeVar("V_co", covariant=True)


class PageMeta(Protocol):
    @property
    def continue_(self) -> str: ...

    @property
    def resource_version(self) -> str: ...


class Page(Protocol[V_co]):
    """One page of a LIST as `Cluster.iter_pages_as` yields it: a `ListPage`, or a mirror's `FastPage`."""

    @property
    def metadata(self) -> PageMeta: ...

    @property
    def items(self) -> Sequence[V_co]: ...


class ListPage(BaseModel, Generic[V]):
    """One page of a LIST: its `continue` token and its items (a page without an items list does not fit)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    metadata: _ListMeta = Field(default_factory=_ListMeta)
    items: list[V]


@functools.cache
def _page_adapter(model: type[View]) -> TypeAdapter[ListPage[Any]]:
    """One validator per view, built on first use (a function's cold start pays only for what it reads)."""
    return TypeAdapter(ListPage[model])  # type: ignore[valid-type]


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:200] if lines else "no detail"


def _transient(error: httpx.ConnectError) -> bool:
    """A connection failure that may not recur on the next try: not refused, not DNS, not certificate verification."""
    return _connect_cause(error).startswith("cannot connect")


def _connect_cause(error: httpx.ConnectError) -> str:
    text = _first_line(error)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return f"TLS verification failed ({text})"
    if "Name or service not known" in text or "nodename nor servname" in text:
        return f"DNS lookup failed ({text})"
    if "Connection refused" in text:
        return "connection refused"
    return f"cannot connect ({text})"


def _phase(error: httpx.TimeoutException) -> str:
    if isinstance(error, httpx.ConnectTimeout):
        return "while connecting"
    if isinstance(error, httpx.WriteTimeout):
        return "while sending the request"
    return "while waiting for the answer"


_ADMISSION_WEBHOOK = re.compile(r'admission webhook "(?P<name>[^"]+)"')
_CALLING_WEBHOOK = re.compile(r'calling webhook "(?P<name>[^"]+)"')


def admission_webhook_named(text: str) -> str | None:
    """The webhook an API server `Status` body blames (`admission webhook "NAME" denied the request`,
    `failed calling webhook "NAME"`), or None when the body names none."""
    body = _loads_or_none(text)
    message = body.get("message") if isinstance(body, dict) and body.get("kind") == "Status" else None
    if not isinstance(message, str):
        return None
    match = _ADMISSION_WEBHOOK.search(message) or _CALLING_WEBHOOK.search(message)
    return match["name"] if match else None


def _text_reason(text: str) -> str:
    body = _loads_or_none(text)
    if body is None:
        return _preview(text) if text.strip() else ""
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return "(" + str(body["message"]).splitlines()[0][:200] + ")"
    return ""


__all__ = ["Cluster", "ClusterError", "Response", "loads_json"]
