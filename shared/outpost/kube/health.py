"""Health endpoint bodies: `[+]name ok` / `[-]name failed: reason withheld` lines.

kube-apiserver's `/livez?verbose`/`/readyz?verbose` and every controller-runtime manager
(koord-manager, kruise-controller-manager `:8000/healthz`, `/readyz`) write this format. The status
code is the verdict (SPEC.md); the lines say which part failed. Lines that are not health lines
("readyz check failed", "livez check passed") are skipped; an empty list means "no report".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r"^\[(?P<mark>[+-])\](?P<name>\S+) (?P<rest>.*)$")


@dataclass(frozen=True)
class HealthLine:
    name: str
    ok: bool
    line: str

    @property
    def detail(self) -> str:
        """The line without its mark: `etcd failed: reason withheld`."""
        return self.line[3:]


def parse_health_body(body: str) -> list[HealthLine]:
    """The health lines of `body`, in order."""
    lines = []
    for raw in body.splitlines():
        stripped = raw.strip()
        match = _LINE.match(stripped)
        if match:
            lines.append(HealthLine(match["name"], match["mark"] == "+", stripped))
    return lines


def failing(lines: list[HealthLine]) -> list[HealthLine]:
    return [line for line in lines if not line.ok]
