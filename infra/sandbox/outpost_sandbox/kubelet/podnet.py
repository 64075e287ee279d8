"""Pod networks on the process node: one network namespace per pod, owning the pod's IP.

The managers bind fixed ports on 0.0.0.0, so replicas need a network each, and the API server must reach each by
its pod IP without kube-proxy. Each pod gets `osbx-pod-<n>` with the IP as a /32 behind a host veth `osbxp<n>`
(its /32 route beats the backend network's; `<n>` keeps link names within 15 characters). The node's own network
(`osbx-node`, behind `osbxn`) is made the same way for its address: the hostNetwork pods (the real node agents)
share it, and the kubelet's API listens there, so the agents find their kubelet at the node's InternalIP as on a
real node. `create`, `create_node` and the deletes are idempotent; failures are one-line `PodNetError`s naming
the command.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess

from outpost_sandbox import setns

POD_RANGE = ipaddress.IPv4Network("10.246.0.0/24")
GATEWAY = "10.246.0.1"
NETNS_PREFIX = "osbx-pod-"
HOST_LINK_PREFIX = "osbxp"
NODE_NETNS = "osbx-node"
NODE_HOST_LINK = "osbxn"


class PodNetError(Exception):
    """A step of a pod network's setup or teardown failed."""


def _host_part(ip: str) -> int:
    address = ipaddress.IPv4Address(ip)
    if address not in POD_RANGE or str(address) == GATEWAY:
        raise PodNetError(f"pod IP {ip} is not in the process node's pod range {POD_RANGE}")
    return int(address) - int(POD_RANGE.network_address)


def netns_name(ip: str) -> str:
    return f"{NETNS_PREFIX}{_host_part(ip)}"


def host_link(ip: str) -> str:
    return f"{HOST_LINK_PREFIX}{_host_part(ip)}"


def allocatable() -> list[str]:
    """Pod IPs in allocation order (the gateway and the range's network/broadcast addresses excluded)."""
    return [str(host) for host in POD_RANGE.hosts() if str(host) != GATEWAY]


def _ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", "-n", netns, *args] if netns else ["ip", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise PodNetError(f"pod network: '{' '.join(cmd)}' failed: {proc.stderr.strip()[:200]}")
    return proc


def existing() -> list[str]:
    """The pod namespaces present on this machine (for cleaning up after a daemon that died)."""
    return [name for name in _names() if name.startswith(NETNS_PREFIX)]


def create(ip: str) -> tuple[str, bool]:
    """The namespace for pod IP `ip`, created (or completed) with its veth pair, address and routes; and whether
    the namespace itself had to be made (anything bound inside an earlier one, such as a relay, is gone)."""
    return _create(netns_name(ip), host_link(ip), ip)


def create_node(ip: str) -> tuple[str, bool]:
    """The node's own network, owning the node address `ip`, as `create` makes a pod's."""
    return _create(NODE_NETNS, NODE_HOST_LINK, ip)


def _names() -> list[str]:
    return [line.split()[0] for line in _ip("netns", "list").stdout.splitlines() if line.strip()]


def _create(ns: str, link: str, ip: str) -> tuple[str, bool]:
    peer = f"{link}c"
    made = ns not in _names()
    if made:
        _ip("netns", "add", ns)
    _ip("link", "set", "lo", "up", netns=ns)
    if _ip("link", "show", "eth0", netns=ns, check=False).returncode != 0:
        _ip("link", "del", link, check=False)  # a half-made pair from an interrupted setup
        _ip("link", "add", link, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", ns)
        _ip("link", "set", peer, "name", "eth0", netns=ns)
    if f"{ip}/32" not in _ip("-4", "addr", "show", "dev", "eth0", netns=ns).stdout:
        _ip("addr", "add", f"{ip}/32", "dev", "eth0", netns=ns)
    _ip("link", "set", "eth0", "up", netns=ns)
    _ip("route", "replace", f"{GATEWAY}/32", "dev", "eth0", "scope", "link", netns=ns)
    _ip("route", "replace", "default", "via", GATEWAY, "dev", "eth0", netns=ns)
    if f"{GATEWAY}/32" not in _ip("-4", "addr", "show", "dev", link).stdout:
        _ip("addr", "add", f"{GATEWAY}/32", "dev", link)
    _ip("link", "set", link, "up")
    _ip("route", "replace", f"{ip}/32", "dev", link, "src", GATEWAY)
    return ns, made


def in_namespace(pid: int, ns: str) -> bool:
    """Whether process `pid` lives in the network namespace `ns` (not in one that was deleted and made again)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{ns}").st_ino
    except OSError:
        return False


def delete(ip: str) -> None:
    _delete(netns_name(ip), host_link(ip))


def delete_node() -> None:
    _delete(NODE_NETNS, NODE_HOST_LINK)


def _delete(ns: str, link: str) -> None:
    _ip("link", "del", link, check=False)  # its peer and its route go with it
    if ns in _names():
        _ip("netns", "del", ns)


def listening_socket(ns: str, host: str, port: int) -> socket.socket:
    """A non-blocking TCP socket listening on host:port inside namespace `ns`."""
    with setns.entered(ns, PodNetError):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
        return sock
