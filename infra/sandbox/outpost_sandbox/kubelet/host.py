"""What the process node lends the real node agents from the machine: host paths, kubepods cgroups, a CRI runtime.

koordlet and kruise-daemon are DaemonSets that read the node itself (the charts' `hostPath` volumes). The node
lends them what they measure or must reach for real, and keeps the rest inside the sandbox:
- `hostPath` under /sys, /dev and /etc/localtime is the machine's own (koordlet reads usage from /proc and the
  cgroup tree, as on any node); every other host path (/var/run, /run, /var/lib/kubelet, /etc/kubernetes, ...)
  is a directory under the sandbox's `host/`, so nothing is written into the machine's /etc or /var.
- The kubepods cgroups a kubelet with the cgroupfs driver makes (cgroup v1: `kubepods`, `kubepods/burstable`,
  `kubepods/besteffort` in each controller koordlet reads; cpusets copied from the root so they can hold tasks).
  koordlet's pod lifecycle watcher fails without them (koordinator@v1.6.0 pkg/koordlet/statesinformer/impl/pleg/
  pleg.go). Made on start, removed (deepest first) with the node.
- A containerd of the sandbox's own (root, state and socket under `host/`), the CRI runtime kruise-daemon needs to
  start at all: it looks for `containerd.sock` in its `/hostvarrun` mount (kruise@v1.8.0 pkg/daemon/criruntime/
  factory.go), the chart's hostPath /var/run.
"""

from __future__ import annotations

import os
from pathlib import Path

from outpost_sandbox.kubelet.runtime import ContainerConfigError, Volume

MACHINE_PATHS = ("/sys", "/dev", "/etc/localtime")
"""Host paths (and everything under them) bound from the machine itself."""

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "blkio")
KUBEPODS = ("kubepods", "kubepods/burstable", "kubepods/besteffort")
CONTAINERD_SOCKET = "run/containerd/containerd.sock"  # under the node's host dir; /var/run is /run there
SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes with the terminating NUL


def host_root(kubelet_dir: Path) -> Path:
    return kubelet_dir / "host"


def host_path(kubelet_dir: Path, path: str) -> Volume:
    """Where a pod's `hostPath` volume `path` is on the machine (see the module docstring)."""
    normal = os.path.normpath("/" + path.strip().lstrip("/"))
    if any(normal == top or normal.startswith(top + "/") for top in MACHINE_PATHS):
        return Volume(Path(normal), recursive=True)
    if normal == "/var/run" or normal.startswith("/var/run/"):
        normal = normal.removeprefix("/var")  # /var/run is a link to /run on every current distribution
    source = host_root(kubelet_dir) / normal.lstrip("/")
    source.mkdir(parents=True, exist_ok=True)
    return Volume(source, recursive=True)


# ---- kubepods cgroups ----------------------------------------------------------------------------------
def cgroup_v1() -> bool:
    return all((CGROUP_ROOT / controller / "tasks").is_file() for controller in CGROUP_CONTROLLERS)


def ensure_kubepods() -> None:
    """The kubepods cgroups in every controller koordlet reads; raises ContainerConfigError when they cannot be."""
    if not cgroup_v1():
        raise ContainerConfigError(
            f"the process node needs cgroup v1 controllers {', '.join(CGROUP_CONTROLLERS)} under {CGROUP_ROOT} "
            "for koordlet's kubepods cgroups (this machine has another layout)"
        )
    try:
        for controller in CGROUP_CONTROLLERS:
            for group in KUBEPODS:
                path = CGROUP_ROOT / controller / group
                path.mkdir(exist_ok=True)
                if controller == "cpuset":  # an empty cpuset can hold no task: inherit the parent's
                    for name in ("cpuset.cpus", "cpuset.mems"):
                        if not (path / name).read_text().strip():
                            (path / name).write_text((path.parent / name).read_text())
    except OSError as exc:
        raise ContainerConfigError(f"kubepods cgroups: {exc}") from exc


def remove_kubepods() -> list[str]:
    """Remove the kubepods cgroups (children first); returns those that could not be (a task still in them)."""
    left = []
    for controller in CGROUP_CONTROLLERS:
        base = CGROUP_ROOT / controller / "kubepods"
        if not base.is_dir():
            continue
        groups = sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
        for group in [*groups, base]:
            try:
                group.rmdir()
            except OSError:
                left.append(str(group))
    return left


# ---- containerd ----------------------------------------------------------------------------------------
def containerd_socket(kubelet_dir: Path) -> Path:
    return host_root(kubelet_dir) / CONTAINERD_SOCKET


def containerd_config(kubelet_dir: Path) -> Path:
    """Write the sandbox containerd's configuration (everything under the node's dirs); returns its path."""
    socket = containerd_socket(kubelet_dir)
    if len(str(socket)) > SOCKET_PATH_MAX:
        raise ContainerConfigError(
            f"containerd socket path {socket} is longer than a unix socket path may be ({SOCKET_PATH_MAX} bytes): "
            "use a shorter --state-dir"
        )
    base = kubelet_dir / "containerd"
    socket.parent.mkdir(parents=True, exist_ok=True)
    base.mkdir(parents=True, exist_ok=True)
    config = base / "config.toml"
    config.write_text(
        "version = 2\n"
        f'root = "{base / "root"}"\n'
        f'state = "{base / "state"}"\n'
        "[grpc]\n"
        f'  address = "{socket}"\n'
        "[ttrpc]\n"
        f'  address = "{socket}.ttrpc"\n'
        '[plugins."io.containerd.internal.v1.opt"]\n'
        f'  path = "{base / "opt"}"\n'
    )
    return config
