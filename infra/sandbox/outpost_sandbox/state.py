"""What a sandbox remembers and how it fails: `SandboxError`, the state directory, the ports picked at first
start and `<state>/sandbox.json`.

Ports are chosen free on loopback below the kernel's ephemeral range and kept for the sandbox's life, because
certificates and kubeconfigs name them; a restart then never meets "address already in use".
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from outpost.errors import OutpostError
from outpost_sandbox.nodes import ADVERTISE_ADDRESS

Log = Callable[[str], None]


def stderr_log(msg: str) -> None:
    print(f"sandbox: {msg}", file=sys.stderr, flush=True)


class SandboxError(OutpostError):
    """The sandbox could not be started, stopped or inspected.

    The message is one line naming the cause and the component; `log_tail` carries the last lines
    of that component's log (or the build log) for a person to read, and is kept out of the
    one-line message on purpose.
    """

    def __init__(
        self, message: str, component: str | None = None, log_tail: str | None = None, log_path: Path | None = None
    ) -> None:
        super().__init__(message)
        self.component = component
        self.log_tail = log_tail
        self.log_path = log_path

    def detail(self) -> str:
        """The message plus the log tail, for a terminal or a test failure."""
        if not self.log_tail:
            return str(self)
        where = f" ({self.log_path})" if self.log_path else ""
        indented = "\n".join(f"    {line}" for line in self.log_tail.splitlines())
        return f"{self}\n  last lines of the log{where}:\n{indented}"


def default_state_dir() -> Path:
    env = os.environ.get("OUTPOST_SANDBOX_DIR")
    return Path(env).expanduser() if env else Path.home() / ".outpost" / "sandbox"


SANDBOX_HOME = "~/.outpost/sandbox/"
"""How environment files (infra/environments/local.yaml) name the default sandbox's files."""


def pointed_at(value: Any, state_dir: Path) -> Any:
    """`value` (a decoded environment file, or any part of one) with every path under the default sandbox
    home replaced by the same file in `state_dir`: local.yaml run against another sandbox (tests, bench)."""
    if isinstance(value, dict):
        return {key: pointed_at(item, state_dir) for key, item in value.items()}
    if isinstance(value, list):
        return [pointed_at(item, state_dir) for item in value]
    if isinstance(value, str) and value.startswith(SANDBOX_HOME):
        return str(state_dir / value.removeprefix(SANDBOX_HOME))
    return value


LISTEN_PORT_FLOOR = 20000
"""Lowest port the sandbox listens on; the registered-services range below it is left alone."""


def ephemeral_port_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports below the kernel's ephemeral range.

    A component keeps its port across restarts (certificates and kubeconfigs name it). A port from
    the ephemeral range could be taken, while the component is down, as the source port of some
    outgoing connection, and the restart would then fail with "address already in use".
    """
    ceiling = ephemeral_port_floor()
    candidates = list(range(LISTEN_PORT_FLOOR, ceiling))
    secrets.SystemRandom().shuffle(candidates)
    # Hold every socket until all are chosen so no port is handed out twice.
    socks: list[socket.socket] = []
    try:
        for port in candidates:
            if len(socks) == count:
                break
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                sock.close()
                continue
            socks.append(sock)
        while len(socks) < count:  # no room below the ephemeral range: let the kernel choose
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@dataclass
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int

    @classmethod
    def allocate(cls) -> Ports:
        return cls(*free_ports(5))

    def all(self) -> list[int]:
        return [self.etcd_client, self.etcd_peer, self.apiserver, self.controller_manager, self.scheduler]


@dataclass
class State:
    ports: Ports
    bin_dir: str
    nodes: int
    advertise_address: str = ADVERTISE_ADDRESS

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> State:
        data = json.loads(text)
        return cls(
            ports=Ports(**data["ports"]),
            bin_dir=str(data["bin_dir"]),
            nodes=int(data["nodes"]),
            advertise_address=str(data.get("advertise_address", ADVERTISE_ADDRESS)),
        )
