"""The sandbox backend network: namespace `outpost-sbx` on a veth pair, owning every pod and node IP.

The API server will not proxy to loopback or link-local addresses, so stand-ins sit behind ordinary ones: the
namespace claims kwok's pod (10.244.0.0/16) and node (10.245.0.0/16) ranges as local, so one process on 0.0.0.0
answers them all. ClusterIPs need no route (the API server dials endpoints). `up()`/`down()` are idempotent;
failures are one-line `NetnsError`s naming the command.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from outpost_sandbox import setns

NETNS = "outpost-sbx"
HOST_IF, NS_IF = "osbx0", "osbx1"
HOST_ADDR, NS_ADDR = "10.243.255.1/30", "10.243.255.2/30"
NS_GW = "10.243.255.2"
POD_CIDR, NODE_CIDR = "10.244.0.0/16", "10.245.0.0/16"
OWNED_CIDRS = (POD_CIDR, NODE_CIDR)


class NetnsError(Exception):
    """A step of the sandbox network setup failed."""


def _ip(*args: str, netns: bool = False, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", "netns", "exec", NETNS, "ip", *args] if netns else ["ip", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise NetnsError(f"network setup: '{' '.join(cmd)}' failed: {proc.stderr.strip()[:200]}")
    return proc


def exists() -> bool:
    return NETNS in _ip("netns", "list").stdout.split()


def _link_exists(name: str, netns: bool = False) -> bool:
    return _ip("link", "show", name, netns=netns, check=False).returncode == 0


def up() -> None:
    """Create (or complete) the namespace, veth pair, addresses and routes."""
    if not exists():
        _ip("netns", "add", NETNS)
    if not _link_exists(HOST_IF):
        if _link_exists(NS_IF, netns=True):
            _ip("link", "del", NS_IF, netns=True)
        _ip("link", "add", HOST_IF, "type", "veth", "peer", "name", NS_IF)
        _ip("link", "set", NS_IF, "netns", NETNS)
    if HOST_ADDR.split("/")[0] not in _ip("-4", "addr", "show", "dev", HOST_IF).stdout:
        _ip("addr", "add", HOST_ADDR, "dev", HOST_IF)
    _ip("link", "set", HOST_IF, "up")
    if NS_ADDR.split("/")[0] not in _ip("-4", "addr", "show", "dev", NS_IF, netns=True).stdout:
        _ip("addr", "add", NS_ADDR, "dev", NS_IF, netns=True)
    _ip("link", "set", NS_IF, "up", netns=True)
    _ip("link", "set", "lo", "up", netns=True)
    for cidr in OWNED_CIDRS:
        _ip("route", "replace", cidr, "via", NS_GW, "dev", HOST_IF)
        _ip("route", "replace", "local", cidr, "dev", "lo", "table", "local", netns=True)


def down() -> None:
    """Remove the veth pair (its host routes go with it) and the namespace; missing pieces are fine."""
    if _link_exists(HOST_IF):
        _ip("link", "del", HOST_IF)  # deletes the peer and every route through it
    if exists():
        _ip("netns", "del", NETNS)
    if exists() or _link_exists(HOST_IF):
        raise NetnsError(f"network teardown: namespace {NETNS} or link {HOST_IF} still present")


@contextmanager
def inside() -> Iterator[None]:
    """Run the body with this thread in the sandbox namespace (`setns.entered`); sockets created there stay there:
    the daemon listens inside the namespace and reaches the API server on the host's loopback."""
    with setns.entered(NETNS, NetnsError):
        yield
