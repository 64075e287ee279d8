"""One message form for every check: `<kind> <ns>/<name>: observed X (want Y)`.

Why: an alert is read by a person at 3 a.m.; each line names the object (lower-case kind,
namespace/name) and contrasts what was observed with what is wanted, so the fix is obvious.
"""

from __future__ import annotations


def ref(kind: str, name: str, namespace: str | None = None) -> str:
    """`daemonset koordinator-system/koordlet`; cluster-scoped objects have no namespace: `node n1`."""
    return f"{kind.lower()} {namespace}/{name}" if namespace else f"{kind.lower()} {name}"


def observed(kind: str, name: str, namespace: str | None, observed: object, want: object) -> str:
    """`deployment kruise-system/kruise-controller-manager: observed 0 ready replicas (want >= 1)`."""
    return f"{ref(kind, name, namespace)}: observed {observed} (want {want})"


FIRST_NAMED = 10
"""How many objects a message names before it only counts the rest (an alert line stays readable)."""


def first_named(names: list[str] | tuple[str, ...], limit: int = FIRST_NAMED) -> str:
    """`n1, n2, n3` or, past `limit`, the first `limit` names then `… (+5 more, 15 in all)`."""
    shown = ", ".join(names[:limit])
    if len(names) <= limit:
        return shown
    return f"{shown} … (+{len(names) - limit} more, {len(names)} in all)"
