"""Health endpoint bodies: `[+]name ok` / `[-]name failed: reason withheld` lines.

kube-apiserver's verbose `/livez`/`/readyz` and controller-runtime managers write this format; the status code is
the verdict (docs/contracts.md "Kubernetes API server"), the lines say what failed. Only the head of a body is read
(`MAX_HEALTH_BYTES`, `MAX_HEALTH_LINES`), so a million lines cost what the head costs; a `truncated` body must
never be judged healthy, since the unread lines may be failing ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r"^\[(?P<mark>[+-])\](?P<name>\S+) (?P<rest>.*)$")

MAX_HEALTH_BYTES = 64 * 1024
"""The head of a health body that is read: 20x kube-apiserver's verbose /readyz (about 3 KiB)."""
MAX_HEALTH_LINES = 1000
"""Lines of the head read: 20x kube-apiserver's verbose /readyz (about 50 checks)."""


@dataclass(frozen=True)
class HealthLine:
    name: str
    ok: bool
    line: str

    @property
    def detail(self) -> str:
        """The line without its mark: `etcd failed: reason withheld`."""
        return self.line[3:]


@dataclass(frozen=True)
class HealthBody:
    lines: list[HealthLine]
    truncated: bool
    """True when `body` went past `MAX_HEALTH_BYTES` or `MAX_HEALTH_LINES`: `lines` are those of its head only."""
    size: int
    """The whole body's length in characters."""


def read_health_body(body: str) -> HealthBody:
    """The health lines of `body`'s head, in order, and whether the body went past it (see the module doc)."""
    head = body[:MAX_HEALTH_BYTES]
    truncated = len(body) > MAX_HEALTH_BYTES
    if truncated and "\n" in head:
        head = head[: head.rindex("\n")]  # a last line cut in two is not read as a line
    raw_lines = head.split("\n", MAX_HEALTH_LINES)
    if len(raw_lines) > MAX_HEALTH_LINES:
        truncated = truncated or bool(raw_lines[-1].strip())
        raw_lines = raw_lines[:MAX_HEALTH_LINES]
    lines = []
    for raw in raw_lines:
        stripped = raw.strip()
        match = _LINE.match(stripped)
        if match:
            lines.append(HealthLine(match["name"], match["mark"] == "+", stripped))
    return HealthBody(lines, truncated, len(body))


def parse_health_body(body: str) -> list[HealthLine]:
    """The health lines of `body`'s head, in order (bounded: see `read_health_body`)."""
    return read_health_body(body).lines


def failing(lines: list[HealthLine]) -> list[HealthLine]:
    return [line for line in lines if not line.ok]
