"""The process node's container runtime: a pod's one container run as a host process, as a container would run.

The real upstream binary runs in the pod's network namespace (a hostNetwork pod: the node's), a UTS namespace named
after the pod (Lease holders read `<pod>_<uuid>` as in a cluster; a hostNetwork pod: after the node) and a private
mount namespace, chrooted into a distroless-like root holding its volumes (a hostPath volume bound recursively, as a
container runtime binds it; an image built on a distribution lent the machine's /usr, read-only), with the pod's
args, env and in-cluster variables (`KUBERNETES_SERVICE_HOST=localhost`, relayed to
the API server's internal endpoint so certificate faults reach only outside observers). Its pid and start time
are recorded, so `stop`/`signal`/`alive` act only on it; what cannot be run is a `ContainerConfigError`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from outpost_sandbox.procs import ProcessTable

TOOLS = {name: shutil.which(name) or f"/usr/bin/{name}" for name in ("nsenter", "unshare", "mount", "mkdir", "chroot")}
"""Host tools by absolute path: the process starts with the container's environment, PATH included."""


class ContainerConfigError(Exception):
    """The pod asks for something this runtime cannot provide."""


@dataclass(frozen=True)
class Volume:
    """Where a pod volume's files are on the machine."""

    source: Path
    recursive: bool = False  # a hostPath: its submounts too (/sys/fs/cgroup holds one per controller)


@dataclass(frozen=True)
class Mount:
    source: Path
    target: str  # absolute path inside the container
    read_only: bool = False
    recursive: bool = False


@dataclass(frozen=True)
class Launch:
    """Everything needed to start one container, derived from the pod (see `launch_for`)."""

    pod: str  # namespace/name
    hostname: str
    netns: str
    binary: Path
    command: list[str]
    env: dict[str, str]
    root: Path
    mounts: list[Mount]
    hosts: str
    userland: bool = False  # bind the machine's /usr read-only (images.USERLAND)


Lookup = Callable[[str, str, str, str], "str | None"]
"""(configmaps|secrets, namespace, name, key) -> the value, or None when the object or key is absent."""


def resolve_env(
    container: Mapping[str, Any], pod: Mapping[str, Any], pod_ip: str, host_ip: str, lookup: Lookup
) -> dict[str, str]:
    """The container's `env`, as a kubelet resolves it (fieldRef, configMapKeyRef, secretKeyRef)."""
    meta = pod.get("metadata") or {}
    fields = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": (pod.get("spec") or {}).get("nodeName", ""),
        "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName", "default"),
        "status.podIP": pod_ip,
        "status.hostIP": host_ip,
    }
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        name = str(item["name"])
        if "value" in item:
            env[name] = str(item["value"])
            continue
        source = item.get("valueFrom") or {}
        if "fieldRef" in source:
            path = source["fieldRef"].get("fieldPath", "")
            if path not in fields:
                raise ContainerConfigError(f"env {name}: fieldRef {path} is not supported by the sandbox kubelet")
            env[name] = str(fields[path])
        elif "configMapKeyRef" in source or "secretKeyRef" in source:
            kind = "configmaps" if "configMapKeyRef" in source else "secrets"
            ref: dict[str, Any] = source.get("configMapKeyRef") or source.get("secretKeyRef") or {}
            value = lookup(kind, meta.get("namespace", ""), ref["name"], ref["key"])
            if value is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f"env {name}: {kind[:-1]} {ref['name']} has no key {ref['key']}")
            env[name] = value
        else:
            raise ContainerConfigError(f"env {name}: unsupported valueFrom {sorted(source)}")
    return env


def launch_for(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    binary: Path,
    pod_dir: Path,
    netns: str,
    pod_ip: str,
    host_ip: str,
    api_port: int,
    volume_dirs: Mapping[str, Volume],
    lookup: Lookup,
    *,
    hostname: str | None = None,
    userland: bool = False,
) -> Launch:
    """`hostname`: the node's name for a hostNetwork pod (default: the pod's)."""
    meta = pod["metadata"]
    hostname = hostname or str(meta["name"])
    command = [str(c) for c in container.get("command") or []]
    if not command or not command[0].startswith("/"):
        raise ContainerConfigError(
            f"container {container.get('name')}: needs an absolute command (the image's "
            "entrypoint is not known to the sandbox kubelet)"
        )
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOSTNAME": hostname,
        "KUBERNETES_SERVICE_HOST": "localhost",
        "KUBERNETES_SERVICE_PORT": str(api_port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(api_port),
    }
    env.update(resolve_env(container, pod, pod_ip, host_ip, lookup))
    mounts = []
    for mount in container.get("volumeMounts") or []:
        name = mount["name"]
        if name not in volume_dirs:
            raise ContainerConfigError(
                f"volumeMount {name}: no such volume, or a volume type the sandbox kubelet cannot provide"
            )
        volume = volume_dirs[name]
        mounts.append(Mount(volume.source, str(mount["mountPath"]), bool(mount.get("readOnly")), volume.recursive))
    hosts = f"127.0.0.1\tlocalhost\n{pod_ip}\t{hostname}\n"
    return Launch(
        pod=f"{meta['namespace']}/{meta['name']}",
        hostname=hostname,
        netns=netns,
        binary=binary,
        command=[*command, *(str(a) for a in container.get("args") or [])],
        env=env,
        root=pod_dir / "rootfs",
        mounts=mounts,
        hosts=hosts,
        userland=userland,
    )


def _prepare_root(launch: Launch) -> None:
    """The directories and empty files the mounts land on (created on disk, mounted only in the namespace)."""
    root = launch.root
    if root.exists():
        shutil.rmtree(root)
    for directory in ("proc", "dev", "sys", "tmp", "etc"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "etc" / "hosts").write_text(launch.hosts)
    (root / "etc" / "nsswitch.conf").write_text("hosts: files\n")
    (root / "etc" / "resolv.conf").write_text("")
    if launch.userland:
        (root / "usr").mkdir()
        for merged in ("bin", "sbin", "lib", "lib64"):  # merged /usr, as Debian and Ubuntu lay it out
            (root / merged).symlink_to(f"usr/{merged}")
    entry = root / launch.command[0].lstrip("/")
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.touch()


def _script(launch: Launch) -> str:
    """The shell run inside the new namespaces: name the host, mount the root, chroot into it."""
    root, mount = shlex.quote(str(launch.root)), TOOLS["mount"]
    lines = [
        "set -e",
        f"printf %s {shlex.quote(launch.hostname)} > /proc/sys/kernel/hostname",
        f"{mount} -t proc proc {root}/proc",
        f"{mount} --rbind /dev {root}/dev",
        f"{mount} --rbind /sys {root}/sys",  # as a container runtime mounts sysfs (koordlet's lscpu reads it)
        f"{mount} -t tmpfs -o mode=1777 tmpfs {root}/tmp",  # noqa: S108 - the container's own /tmp
        f"{mount} --bind {shlex.quote(str(launch.binary))} {root}/{shlex.quote(launch.command[0].lstrip('/'))}",
    ]
    if launch.userland:
        lines += [f"{mount} --bind /usr {root}/usr", f"{mount} -o remount,bind,ro {root}/usr"]
    # Shallow paths first, so a mount under /tmp lands on the fresh tmpfs, not beneath it.
    for volume in sorted(launch.mounts, key=lambda m: m.target.count("/")):
        target = f"{root}/{shlex.quote(volume.target.strip('/'))}"
        if volume.source.is_file():  # a file lands on a file (the host's /etc/localtime)
            parent = f"{root}/{shlex.quote(os.path.dirname(volume.target.strip('/')))}"
            lines += [f"{TOOLS['mkdir']} -p {parent}", f": > {target}"]
        else:
            lines.append(f"{TOOLS['mkdir']} -p {target}")
        bind = "--rbind" if volume.recursive else "--bind"
        lines.append(f"{mount} {bind} {shlex.quote(str(volume.source))} {target}")
        if volume.read_only:
            lines.append(f"{mount} -o remount,bind,ro {target}")
    lines.append(f'exec {TOOLS["chroot"]} {root} "$@"')
    return "\n".join(lines)


def start(table: ProcessTable, key: str, launch: Launch) -> int:
    """Start the container of `launch` as process `key` of `table`; returns its pid."""
    _prepare_root(launch)
    # nsenter, not `ip netns exec`: that one mounts a fresh /sys for the namespace, without the machine's cgroup
    # mounts beneath it, which the node agents' /sys/fs/cgroup hostPath must carry.
    argv = [
        TOOLS["nsenter"],
        f"--net=/run/netns/{launch.netns}",
        TOOLS["unshare"],
        "--mount",
        "--uts",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        _script(launch),
        "sh",
        *launch.command,
    ]
    return table.start(key, argv, env=launch.env, cwd=Path("/"))


def signal_process(table: ProcessTable, key: str, sig: signal.Signals) -> bool:
    """Send `sig` to process `key` if it is ours and alive; returns whether it was."""
    record = table.record(key)
    if record is None or not table.alive(key):
        return False
    try:
        os.kill(record.pid, sig)
    except ProcessLookupError:
        return False
    return True
