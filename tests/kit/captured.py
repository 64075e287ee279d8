"""The one format of captured sandbox output: a `Captured` record per state, one JSON file each.

A record holds what the API server answered, untouched but for `metadata.managedFields` (dropped) and the
`kind`/`apiVersion` a LIST leaves out of its items (given back): the `objects`, and the raw `answers` that are no
objects (health bodies through a proxy), each `[status code, body]`, or `[null, "<error type>: <message>"]` where
nothing answered. `captured_at` is when it was taken: the `now` a unit test judges ages in the record with, so a
healthy capture stays healthy forever and a stale one stays stale. `source` says what took it (the command, the
versions of what answered). `python -m kit.capture AREA` writes them; nothing else does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from outpost.kube.timestamps import format_time, parse_time

TESTS = Path(__file__).resolve().parents[1]
SANDBOX = TESTS / "fixtures" / "sandbox"
"""The captures of the whole sandbox (`healthy.json`)."""

Answer = tuple[int | None, str]


@dataclass(frozen=True)
class Captured:
    name: str
    """The state: `healthy`, or what a fault left (`<fault>` or a stem naming fault and target)."""
    captured_at: datetime
    objects: list[dict[str, Any]]
    answers: dict[str, Answer] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return next(
            o
            for o in self.of_kind(kind)
            if o["metadata"]["name"] == name and namespace in (None, o["metadata"].get("namespace"))
        )

    def pods(self, namespace: str, prefix: str = "") -> list[str]:
        """Names of the namespace's pods (those starting with `prefix`), sorted."""
        return sorted(
            o["metadata"]["name"]
            for o in self.of_kind("Pod")
            if o["metadata"].get("namespace") == namespace and o["metadata"]["name"].startswith(prefix)
        )

    def replaced(
        self, objects: list[dict[str, Any]] | None = None, answers: dict[str, Answer] | None = None
    ) -> Captured:
        """The same capture with other objects or more answers: a state no fault produces, made in a test."""
        kept = self.objects if objects is None else objects
        return Captured(self.name, self.captured_at, kept, {**self.answers, **(answers or {})}, self.source)

    def document(self) -> dict[str, Any]:
        return {
            "captured_at": format_time(self.captured_at, micro=True),
            "source": self.source,
            "objects": self.objects,
            "answers": {label: list(answer) for label, answer in self.answers.items()},
        }


def load(path: Path) -> Captured:
    raw = json.loads(path.read_text())
    captured_at = parse_time(raw["captured_at"])
    assert captured_at is not None, f"{path}: captured_at {raw['captured_at']!r}"
    answers = {label: (status, body) for label, (status, body) in raw.get("answers", {}).items()}
    return Captured(path.stem, captured_at, raw["objects"], answers, raw.get("source", {}))


def save(path: Path, captured: Captured) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(captured.document(), indent=1, sort_keys=True) + "\n")


def trimmed(obj: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    """An object as a capture keeps it: its kind and apiVersion (a LIST leaves them out), no managedFields."""
    kept = {"kind": kind, "apiVersion": api_version, **obj}
    kept["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return kept
