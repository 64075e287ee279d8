"""Write access to a cluster, for the few callers that must change it.

`Cluster` is read-only by construction; writing is a separate capability for the `kwok-pod-reconciler` job
(under its own identity) and the sandbox. It sends through the same `Cluster._send`, so a write keeps every
guarantee of a read (TLS, deadline, one-line errors without a token). Any unexpected answer raises
`ClusterResponseError`; `delete` treats 404 as done.
"""

from __future__ import annotations

import json
from typing import Any

from outpost.cluster.client import Cluster, Query

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_BODY = "application/json"


class ClusterWriter(Cluster):
    """A `Cluster` that can also create, patch, apply and delete. Use only where writing is the job."""

    def create(self, path: str, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """POST `obj` to the collection at `path`; with `dry_run`, the server admits but persists nothing."""
        params: dict[str, str | int] = {"dryRun": "All"} if dry_run else {}
        return self._write("POST", path, obj, JSON_BODY, params, expected=(200, 201, 202))

    def merge_patch(self, path: str, patch: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """JSON merge patch (RFC 7386) of the object (or subresource) at `path`."""
        params: dict[str, str | int] = {"dryRun": "All"} if dry_run else {}
        return self._write("PATCH", path, patch, MERGE_PATCH, params)

    def apply(self, path: str, obj: dict[str, Any], *, field_manager: str, force: bool = True) -> dict[str, Any]:
        """Server-side apply of `obj` at its object path, owning the fields it sets as `field_manager`."""
        params: dict[str, str | int] = {"fieldManager": field_manager}
        if force:
            params["force"] = "true"
        return self._write("PATCH", path, obj, APPLY_PATCH, params, expected=(200, 201))

    def replace(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        """PUT `obj` at `path` (optimistic concurrency through its resourceVersion)."""
        return self._write("PUT", path, obj, JSON_BODY, {})

    def delete(self, path: str, params: Query | None = None) -> dict[str, Any] | None:
        """DELETE the object at `path` (`params` e.g. gracePeriodSeconds); None when it was already gone (404)."""
        response = self._send("DELETE", path, params)
        if response.status_code == 404:
            return None
        return self._json_object(response, expected=(200, 202))

    def _write(
        self,
        method: str,
        path: str,
        obj: dict[str, Any],
        content_type: str,
        params: Query,
        expected: tuple[int, ...] = (200,),
    ) -> dict[str, Any]:
        body = json.dumps(obj, separators=(",", ":")).encode()
        response = self._send(method, path, params, body=body, content_type=content_type)
        return self._json_object(response, expected=expected)
