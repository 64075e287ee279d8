"""The process node's kubelet: one real-looking node whose pods run the real upstream managers as processes.

It registers and leases its Node like a kubelet, runs every pod bound to it (an upstream binary the sandbox built
as a process in the pod's own network, `runtime`/`podnet`; a hostNetwork pod, the real koordlet and kruise-daemon,
in the node's network with the host paths, cgroups and containerd `host` lends them, the kubelet API `api` at the
node's address and the pod-resources API `podresources` on its socket; any other pod as a Running stand-in),
restarts exited
containers with CrashLoopBackOff (capped at `BACKOFF_MAX_S`, below upstream's 300 s so a heal is quick), and
mirrors readiness probes into Ready so EndpointSlices follow the process (docs/contracts.md "Sandbox"). Faults
arrive via `faults.json`. It never touches another node's pods or a process it did not record (pid + start time),
adopts a previous instance's processes, survives API outages, and never logs a token.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import ipaddress
import json
import logging
import os
import shutil
import signal
import ssl
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from outpost.kube.timestamps import format_time
from outpost_sandbox import pki
from outpost_sandbox.backends.kube import AsyncKube, Kube, SandboxApiError
from outpost_sandbox.kubelet import api, host, images, podnet, podresources, runtime
from outpost_sandbox.procs import ProcessTable

log = logging.getLogger("outpost_sandbox.kubelet")

NODE_NAME = "outpost-sandbox-node"
NODE_IP = "10.245.255.1"
"""In the backend network's node range, above every fake node's address (10.245.0.1 upwards) and below the API
server's advertise address (10.245.255.254); owned by the node's own network (`podnet.create_node`), whose /32 route
beats the backend network's /16, so the node's agents, not the backend's stand-ins, answer it."""
CONTAINERD = "containerd"  # its key in the node's own process table
NODE_LABEL = "outpost.sandbox/kubelet"


def has_own_kubelet(node: dict[str, Any]) -> bool:
    """Whether `node` is the process node, whose real agents report for it (not the backend's stand-ins)."""
    return NODE_LABEL in ((node.get("metadata") or {}).get("labels") or {})


NODE_LEASE_S = 40
NODE_RENEW_S = 10.0
NODE_STATUS_S = 300.0  # the kubelet's nodeStatusReportFrequency
SYNC_S = 1.0
BACKOFF_INITIAL_S = 10.0
BACKOFF_MAX_S = 40.0
BACKOFF_RESET_S = 2 * BACKOFF_MAX_S  # a container that ran this long restarts without backoff, as upstream's
TOKEN_SECONDS = 3607  # what the ServiceAccount admission plugin asks for in kube-api-access volumes
VOLUME_REFRESH_S = 60.0
FAULTS_FILE = "faults.json"
RESOURCES = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "1Ti"}


def now_text() -> str:
    return format_time(dt.datetime.now(dt.UTC))


@dataclass
class Probe:
    kind: str  # http | tcp
    port: int
    path: str = "/"
    scheme: str = "HTTP"
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3
    initial_delay: float = 0.0

    @classmethod
    def of(cls, container: dict[str, Any]) -> Probe | None:
        spec = container.get("readinessProbe")
        if not spec:
            return None
        ports = {p.get("name"): p.get("containerPort") for p in container.get("ports") or []}

        def port_of(value: Any) -> int:
            return int(ports.get(value, 0) if isinstance(value, str) and not value.isdigit() else value)

        if "httpGet" in spec:
            get = spec["httpGet"]
            path = str(get.get("path") or "/")
            probe = cls(
                "http",
                port_of(get["port"]),
                path if path.startswith("/") else f"/{path}",
                str(get.get("scheme", "HTTP")).upper(),
            )
        elif "tcpSocket" in spec:
            probe = cls("tcp", port_of(spec["tcpSocket"]["port"]))
        else:
            return None
        # Upstream's defaults for whatever the probe leaves out (k8s.io/api core/v1 Probe).
        probe.period = float(spec.get("periodSeconds", 10))
        probe.timeout = float(spec.get("timeoutSeconds", 1))
        probe.success_threshold = int(spec.get("successThreshold", 1))
        probe.failure_threshold = int(spec.get("failureThreshold", 3))
        probe.initial_delay = float(spec.get("initialDelaySeconds", 0))
        return probe


@dataclass
class PodState:
    """What the node keeps about one pod between syncs."""

    uid: str
    namespace: str
    name: str
    key: str  # its process's name in the process table
    ip: str | None = None
    netns: str | None = None
    relay: asyncio.Server | None = None
    runnable: bool = False
    binary: Path | None = None
    started_at: str | None = None
    started_mono: float = 0.0
    restarts: int = 0
    last_terminated: dict[str, Any] | None = None
    backoff_s: float = 0.0
    restart_at: float = 0.0
    waiting: tuple[str, str] | None = None  # (reason, message) while no process runs
    probe: Probe | None = None
    probe_successes: int = 0
    probe_failures: int = 0
    next_probe: float = 0.0
    ready: bool = False
    frozen: bool = False
    token_refresh_at: float = 0.0
    volumes_refresh_at: float = 0.0
    last_status: dict[str, Any] | None = None
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)  # condition -> (status, time)
    terminating: bool = False


class Kubelet:
    def __init__(self, state_dir: Path, kubeconfig: Path, bin_dir: Path, ca_file: Path) -> None:
        self.state_dir = state_dir
        self.dir = state_dir / "kubelet"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.bin_dir = bin_dir
        self.ca_file = ca_file
        self.kube = AsyncKube(Kube.from_kubeconfig(kubeconfig, timeout=15), workers=8)
        self.api_port = int(self.kube.kube.writer.server.rsplit(":", 1)[1])
        self.table = ProcessTable(self.dir / "run", state_dir / "logs" / "pods")
        self.node_table = ProcessTable(self.dir / "node-run", state_dir / "logs" / "node")
        self.pods: dict[str, PodState] = {}
        self.node_pods: list[dict[str, Any]] = []  # the last list of this node's pods, for the kubelet API
        self.node_netns: str | None = None
        self.node_relay: asyncio.Server | None = None
        self.node_api: asyncio.Server | None = None
        self.pod_resources: Any = None  # the gRPC pod-resources server (`podresources.serve`)
        self.faults: dict[str, Any] = {}
        self._faults_mtime = -1.0
        self._children: set[int] = set()
        self._node_since = now_text()

    # ---- faults ----------------------------------------------------------------------------------
    def reload_faults(self) -> None:
        path = self.dir / FAULTS_FILE
        try:
            mtime = path.stat().st_mtime if path.exists() else 0.0
            if mtime == self._faults_mtime:
                return
            self.faults = json.loads(path.read_text()) if path.exists() else {}
            self._faults_mtime = mtime
            log.info("faults: %s", json.dumps(self.faults, sort_keys=True))
        except (OSError, ValueError) as exc:
            log.error("faults file %s unreadable, keeping the last good one: %s", path, exc)

    def _held(self, kind: str, pod: dict[str, Any]) -> bool:
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        for entry in self.faults.get(kind) or []:
            if entry.get("namespace") != meta.get("namespace"):
                continue
            wanted = dict(item.split("=", 1) for item in str(entry.get("selector", "")).split(",") if "=" in item)
            if wanted and all(labels.get(k) == v for k, v in wanted.items()):
                return True
        return False

    # ---- the node --------------------------------------------------------------------------------
    def node_object(self) -> dict[str, Any]:
        conditions = [
            {
                "type": kind,
                "status": "False",
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": now_text(),
                "lastTransitionTime": self._node_since,
            }
            for kind, reason, message in (
                ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            )
        ]
        conditions.append(
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "outpost sandbox kubelet is posting ready status",
                "lastHeartbeatTime": now_text(),
                "lastTransitionTime": self._node_since,
            }
        )
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": NODE_NAME,
                "labels": {
                    "kubernetes.io/hostname": NODE_NAME,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    NODE_LABEL: "process",
                },
            },
            "status": {
                "addresses": [{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": NODE_NAME}],
                "capacity": dict(RESOURCES),
                "allocatable": dict(RESOURCES),
                "conditions": conditions,
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "architecture": "amd64",
                    "operatingSystem": "linux",
                    "osImage": "",
                    "kernelVersion": os.uname().release,
                    "kubeletVersion": "",
                    "kubeProxyVersion": "",
                    "containerRuntimeVersion": "outpost-sandbox://1",
                    "machineID": "",
                    "systemUUID": "",
                    "bootID": "",
                },
            },
        }

    async def node_loop(self) -> None:
        reported = -1e9
        while True:
            try:
                if time.monotonic() - reported >= NODE_STATUS_S:
                    await self.kube.run(partial(_register, self.node_object()))
                    reported = time.monotonic()
                await self.kube.run(_renew_node_lease)
            except SandboxApiError as exc:
                log.warning("node %s: %s", NODE_NAME, exc)
                reported = -1e9  # report the status again once the API server answers
            await asyncio.to_thread(self.ensure_containerd)
            await asyncio.sleep(NODE_RENEW_S)

    # ---- what the node lends its hostNetwork pods ---------------------------------------------------------
    async def start_node_services(self) -> None:
        """The node's network with the API relay and the kubelet API in it, the kubepods cgroups and containerd.

        A part that cannot be made is logged and left out: the agent that needs it then fails as it would on a
        node without it (koordlet exits without kubepods, kruise-daemon without a runtime socket)."""
        netns, _made = await asyncio.to_thread(podnet.create_node, NODE_IP)
        self.node_netns = netns
        self.node_relay = await self.start_relay(netns)
        cert, key = self.dir / "kubelet.crt", self.dir / "kubelet.key"
        ca = pki.read_pair(self.ca_file.parent, self.ca_file.stem)
        if ca is None:
            raise podnet.PodNetError(f"the sandbox CA is missing beside {self.ca_file}")
        pki.write_pair(self.dir, "kubelet", pki.issue(ca, NODE_NAME, dns=(NODE_NAME,), ips=(NODE_IP,), server=True))
        server = api.KubeletApi(NODE_NAME, lambda: list(self.node_pods), self._review)
        sock = await asyncio.to_thread(podnet.listening_socket, netns, NODE_IP, api.PORT)
        self.node_api = await server.serve(sock, api.server_context(str(cert), str(key), str(self.ca_file)))
        socket = host.host_root(self.dir) / podresources.SOCKET
        if len(str(socket)) > host.SOCKET_PATH_MAX:
            log.error("node %s: pod-resources socket path %s too long for a unix socket", NODE_NAME, socket)
        else:
            self.pod_resources = await asyncio.to_thread(podresources.serve, socket, lambda: list(self.node_pods))
        try:
            await asyncio.to_thread(host.ensure_kubepods)
        except runtime.ContainerConfigError as exc:
            log.error("node %s: %s", NODE_NAME, exc)
        await asyncio.to_thread(self.ensure_containerd)

    async def _review(self, body: dict[str, Any]) -> dict[str, Any]:
        group = "authentication.k8s.io" if body["kind"] == "TokenReview" else "authorization.k8s.io"
        plural = "tokenreviews" if body["kind"] == "TokenReview" else "subjectaccessreviews"
        try:
            answer: dict[str, Any] = await self.kube.run(lambda k: k.create(f"/apis/{group}/v1/{plural}", body))
        except SandboxApiError as exc:
            raise api.ReviewError(f"{body['kind']}: {exc}") from None
        return answer

    def ensure_containerd(self) -> None:
        """containerd running under the node's dirs (started again if it exited)."""
        if self.node_table.alive(CONTAINERD):
            return
        binary = shutil.which("containerd")
        if binary is None:
            log.error("node %s: no containerd on this machine (make system-packages installs it)", NODE_NAME)
            return
        try:
            config = host.containerd_config(self.dir)
        except runtime.ContainerConfigError as exc:
            log.error("node %s: %s", NODE_NAME, exc)
            return
        host.containerd_socket(self.dir).unlink(missing_ok=True)
        pid = self.node_table.start(
            CONTAINERD, [binary, "--config", str(config)], env={"PATH": os.environ.get("PATH", "")}
        )
        log.info("node %s: started containerd (pid %d)", NODE_NAME, pid)

    # ---- pods ------------------------------------------------------------------------------------
    async def sync_loop(self, ready_file: Path) -> None:
        while True:
            self.reload_faults()
            try:
                listed = await self.kube.run(_pods_on_node)
                pods = [p for p in listed.get("items") or [] if p.get("spec", {}).get("nodeName") == NODE_NAME]
                self.node_pods = pods
                await self.sync(pods)
                if not ready_file.exists():
                    ready_file.write_text(json.dumps({"node": NODE_NAME}))
            except SandboxApiError as exc:
                log.warning("pod sync: %s", exc)
            except Exception:  # one bad pod must not stop the node; logged, retried next round
                log.exception("pod sync failed")
            await asyncio.sleep(SYNC_S)

    async def sync(self, pods: list[dict[str, Any]]) -> None:
        seen = set()
        for pod in pods:
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            state = self.pods.get(uid)
            if state is None:
                meta = pod["metadata"]
                state = PodState(uid, meta["namespace"], meta["name"], f"{meta['namespace']}_{meta['name']}")
                self.adopt(state, pod)
                self.pods[uid] = state
            if state.terminating:
                continue
            if pod["metadata"].get("deletionTimestamp"):
                state.terminating = True
                asyncio.get_running_loop().create_task(self.terminate(state, pod))
                continue
            try:
                await self.run_pod(state, pod)
            except (runtime.ContainerConfigError, podnet.PodNetError) as exc:
                state.waiting = ("CreateContainerConfigError", str(exc))
                log.error("pod %s/%s: %s", state.namespace, state.name, exc)
            await self.write_status(state, pod)
        for uid in [uid for uid, state in self.pods.items() if uid not in seen and not state.terminating]:
            state = self.pods[uid]
            state.terminating = True
            asyncio.get_running_loop().create_task(self.terminate(state, None))

    def adopt(self, state: PodState, pod: dict[str, Any]) -> None:
        """Take over what a previous instance of this kubelet left: the IP, restart count, a live process."""
        status = pod.get("status") or {}
        ip = status.get("podIP") or None
        if ip == NODE_IP or (ip is not None and ipaddress.ip_address(ip) in podnet.POD_RANGE):
            state.ip = ip  # an address this node gave; anything else is given anew
        for cs in status.get("containerStatuses") or []:
            state.restarts = int(cs.get("restartCount") or 0)
            running = (cs.get("state") or {}).get("running")
            if running and self.table.alive(state.key):
                state.started_at = running.get("startedAt")
                state.started_mono = time.monotonic()
        for cond in status.get("conditions") or []:
            state.transitions[cond.get("type", "")] = (cond.get("status", ""), cond.get("lastTransitionTime") or "")

    def allocate_ip(self) -> str:
        used = {s.ip for s in self.pods.values() if s.ip}
        for ip in podnet.allocatable():
            if ip not in used:
                return ip
        raise podnet.PodNetError(f"no free pod IP left in {podnet.POD_RANGE}")

    async def run_pod(self, state: PodState, pod: dict[str, Any]) -> None:
        spec = pod["spec"]
        container = spec["containers"][0]
        command = container.get("command") or [None]
        image = images.resolve(str(container.get("image", "")), self.bin_dir, command[0])
        if image.missing:
            state.waiting = ("ErrImageNeverPull", image.missing)
            return
        if image.binary is None:  # a stand-in: Running and Ready, no process
            state.runnable = False
            if state.ip is None:
                state.ip = NODE_IP if spec.get("hostNetwork") else self.allocate_ip()
            state.started_at = state.started_at or now_text()
            state.ready = True
            state.waiting = None
            return
        host_network = bool(spec.get("hostNetwork"))
        state.runnable, state.binary = True, image.binary
        if state.probe is None:
            state.probe = Probe.of(container)
        if state.ip is None:
            state.ip = NODE_IP if host_network else self.allocate_ip()
        ip = state.ip
        if host_network:
            if self.node_netns is None or self.node_relay is None:
                raise podnet.PodNetError(f"the node's network {podnet.NODE_NETNS} is not up")
            state.netns, state.relay = self.node_netns, self.node_relay
        elif state.netns is None or state.relay is None:
            made_netns, _made = await asyncio.to_thread(podnet.create, ip)
            state.netns = made_netns
            state.relay = state.relay or await self.start_relay(made_netns)
        await self.refresh_volumes(state, pod)
        self.observe_process(state)
        if self._held("crashloop", pod):
            if self.table.alive(state.key):
                await asyncio.to_thread(self.table.stop, state.key, 0.1, True)
                self.observe_process(state)
            state.waiting = (
                "CrashLoopBackOff",
                f"back-off {BACKOFF_MAX_S:.0f}s restarting failed container="
                f"{container['name']} pod={state.name}_{state.namespace}({state.uid})",
            )
            state.restart_at = time.monotonic()
            return
        pid = self.table.pid(state.key)
        if pid is not None and not podnet.in_namespace(pid, state.netns or ""):
            # Its pod's network went from under it (deleted, made again): as a kubelet does for a pod whose sandbox
            # is gone, the container is killed and started again in the pod's network.
            log.warning(
                "pod %s/%s: process %d is not in the pod's network %s; restarting it",
                state.namespace,
                state.name,
                pid,
                state.netns,
            )
            await asyncio.to_thread(self.table.stop, state.key, 5.0)
            self.observe_process(state)
        if self.table.alive(state.key):
            frozen = self._held("frozen", pod)
            if frozen != state.frozen:
                runtime.signal_process(self.table, state.key, signal.SIGSTOP if frozen else signal.SIGCONT)
                state.frozen = frozen
            return
        if time.monotonic() < state.restart_at:
            return
        # The pod's network is made again if it went (a kubelet sets up the sandbox of a container it restarts).
        if host_network:
            pod_netns, made = await asyncio.to_thread(podnet.create_node, NODE_IP)
            if made:  # the node's relay and API lived in the namespace that went
                log.warning("node %s: its network %s was made again", NODE_NAME, pod_netns)
        else:
            pod_netns, made = await asyncio.to_thread(podnet.create, ip)
            if made and state.relay is not None:
                state.relay.close()
                state.relay = await self.start_relay(pod_netns)
        state.netns = pod_netns
        volumes = self.volume_dirs(state, pod)
        launch = runtime.launch_for(
            pod,
            container,
            image.binary,
            self.pod_dir(state),
            pod_netns,
            ip,
            NODE_IP,
            self.api_port,
            volumes,
            self.lookup_sync,
            hostname=NODE_NAME if host_network else None,
            userland=image.userland,
        )
        pid = await asyncio.to_thread(runtime.start, self.table, state.key, launch)
        self._children.add(pid)
        if state.last_terminated is not None or state.started_at is not None:
            state.restarts += 1
        state.started_at, state.started_mono = now_text(), time.monotonic()
        state.waiting, state.frozen, state.ready = None, False, False
        state.probe_successes = state.probe_failures = 0
        state.next_probe = time.monotonic() + (state.probe.initial_delay if state.probe else 0)
        log.info(
            "pod %s/%s: started %s (pid %d, restart %d)",
            state.namespace,
            state.name,
            launch.command[0],
            pid,
            state.restarts,
        )

    def observe_process(self, state: PodState) -> None:
        """Notice a container that exited since the last look, and schedule its restart."""
        if state.started_at is None:
            return
        record = self.table.record(state.key)
        status: int | None = None
        if record is not None and record.pid in self._children:
            # Reaped here, before the process table's liveness check would reap it and lose its exit status.
            try:
                pid, raw = os.waitpid(record.pid, os.WNOHANG)
            except ChildProcessError:
                self._children.discard(record.pid)
            else:
                if pid:
                    status = os.waitstatus_to_exitcode(raw)
                    self._children.discard(record.pid)
        if status is None and self.table.alive(state.key):
            return
        # A signal is reported as 128 + its number, as a container runtime does; unknown (a process a previous
        # instance started) as SIGKILL's 137.
        code = 137 if status is None else (128 - status if status < 0 else status)
        reason = "Completed" if code == 0 else "Error"
        ran = time.monotonic() - state.started_mono
        state.last_terminated = {
            "exitCode": code,
            "reason": reason,
            "startedAt": state.started_at,
            "finishedAt": now_text(),
        }
        state.started_at, state.ready, state.frozen = None, False, False
        if ran >= BACKOFF_RESET_S:
            state.backoff_s = 0.0
        delay = state.backoff_s
        state.backoff_s = min(BACKOFF_MAX_S, max(BACKOFF_INITIAL_S, state.backoff_s * 2))
        state.restart_at = time.monotonic() + delay
        state.waiting = ("CrashLoopBackOff", f"back-off {delay:.0f}s restarting failed container") if delay else None
        log.warning(
            "pod %s/%s: container exited with %d after %.0f s; restart in %.0f s",
            state.namespace,
            state.name,
            code,
            ran,
            delay,
        )

    # ---- volumes and the ServiceAccount token ----------------------------------------------------
    def pod_dir(self, state: PodState) -> Path:
        return self.dir / "pods" / state.uid

    def lookup_sync(self, kind: str, namespace: str, name: str, key: str) -> str | None:
        obj = self.kube.kube.get(f"/api/v1/namespaces/{namespace}/{kind}/{name}", ok_missing=True)
        if not obj:
            return None
        if kind == "secrets":
            import base64

            value = (obj.get("data") or {}).get(key)
            return base64.b64decode(value).decode() if value is not None else None
        return (obj.get("data") or {}).get(key)

    def volume_dirs(self, state: PodState, pod: dict[str, Any]) -> dict[str, runtime.Volume]:
        base = self.pod_dir(state) / "volumes"
        volumes = {
            v["name"]: runtime.Volume(base / v["name"])
            for v in pod["spec"].get("volumes") or []
            if any(k in v for k in ("configMap", "secret", "emptyDir", "projected"))
        }
        for volume in pod["spec"].get("volumes") or []:
            if "hostPath" in volume:
                volumes[volume["name"]] = host.host_path(self.dir, str(volume["hostPath"].get("path", "")))
        return volumes

    async def refresh_volumes(self, state: PodState, pod: dict[str, Any]) -> None:
        monotonic = time.monotonic()
        if monotonic < min(state.token_refresh_at, state.volumes_refresh_at):
            return
        base = self.pod_dir(state) / "volumes"
        token_lifetime: float | None = None
        for volume in pod["spec"].get("volumes") or []:
            target = base / volume["name"]
            target.mkdir(parents=True, exist_ok=True)
            if "emptyDir" in volume:
                continue
            files: dict[str, bytes] = {}
            if "configMap" in volume or "secret" in volume:
                files = await self._object_files(state.namespace, volume)
            elif "projected" in volume:
                for source in volume["projected"].get("sources") or []:
                    if "serviceAccountToken" in source:
                        token_spec = source["serviceAccountToken"]
                        token = await self._token(
                            pod, int(token_spec.get("expirationSeconds", TOKEN_SECONDS)), token_spec.get("audience")
                        )
                        files[str(token_spec.get("path", "token"))] = token.encode()
                        token_lifetime = float(token_spec.get("expirationSeconds", TOKEN_SECONDS))
                    elif "configMap" in source or "secret" in source:
                        files.update(await self._object_files(state.namespace, source))
                    elif "downwardAPI" in source:
                        for item in source["downwardAPI"].get("items") or []:
                            path = (item.get("fieldRef") or {}).get("fieldPath")
                            value = {
                                "metadata.namespace": state.namespace,
                                "metadata.name": state.name,
                                "metadata.uid": state.uid,
                            }.get(str(path))
                            if value is None:
                                raise runtime.ContainerConfigError(
                                    f"volume {volume['name']}: downwardAPI {path} "
                                    "is not supported by the sandbox kubelet"
                                )
                            files[str(item["path"])] = value.encode()
            else:
                continue
            for name, data in files.items():
                path = target / name
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, path)
        state.volumes_refresh_at = monotonic + VOLUME_REFRESH_S
        state.token_refresh_at = monotonic + (token_lifetime * 0.8 if token_lifetime else VOLUME_REFRESH_S)

    async def _object_files(self, namespace: str, source: dict[str, Any]) -> dict[str, bytes]:
        import base64

        kind = "configMap" if "configMap" in source else "secret"
        ref = source[kind]
        name = ref.get("name") or ref.get("secretName")
        path = f"/api/v1/namespaces/{namespace}/{'configmaps' if kind == 'configMap' else 'secrets'}/{name}"
        obj = await self.kube.run(lambda k: k.get(path, ok_missing=True))
        if not obj:
            if ref.get("optional"):
                return {}
            raise runtime.ContainerConfigError(f"{kind} {namespace}/{name} not found")
        data = obj.get("data") or {}
        decoded = {k: (base64.b64decode(v) if kind == "secret" else str(v).encode()) for k, v in data.items()}
        items = ref.get("items")
        if items:
            return {str(i["path"]): decoded[i["key"]] for i in items if i["key"] in decoded}
        return decoded

    async def _token(self, pod: dict[str, Any], seconds: int, audience: str | None) -> str:
        meta = pod["metadata"]
        sa = pod["spec"].get("serviceAccountName") or "default"
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "audiences": [audience] if audience else [],
                "expirationSeconds": seconds,
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]},
            },
        }
        path = f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{sa}/token"
        answer = await self.kube.run(lambda k: k.create(path, request))
        token = (answer.get("status") or {}).get("token")
        if not isinstance(token, str) or not token:
            raise runtime.ContainerConfigError(
                f"TokenRequest for serviceaccount {meta['namespace']}/{sa} returned no token"
            )
        return token

    # ---- the API relay ---------------------------------------------------------------------------
    async def start_relay(self, netns: str) -> asyncio.Server:
        sock = await asyncio.to_thread(podnet.listening_socket, netns, "127.0.0.1", self.api_port)
        return await asyncio.start_server(self._relay, sock=sock)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.api_port)
        except OSError:
            writer.close()
            return

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                with contextlib.suppress(Exception):
                    dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

    # ---- readiness -------------------------------------------------------------------------------
    async def probe_loop(self) -> None:
        while True:
            due = [
                s
                for s in self.pods.values()
                if s.runnable and s.started_at and not s.terminating and time.monotonic() >= s.next_probe
            ]
            await asyncio.gather(*(self.probe_once(s) for s in due))
            await asyncio.sleep(0.2)

    async def probe_once(self, state: PodState) -> None:
        probe = state.probe
        if probe is None:
            state.ready = self.table.alive(state.key)
            state.next_probe = time.monotonic() + 1.0
            return
        state.next_probe = time.monotonic() + probe.period
        ok = await probe_succeeds(probe, state.ip or "")
        if ok:
            state.probe_successes, state.probe_failures = state.probe_successes + 1, 0
            if state.probe_successes >= probe.success_threshold:
                state.ready = True
        else:
            state.probe_failures, state.probe_successes = state.probe_failures + 1, 0
            if state.probe_failures >= probe.failure_threshold:
                state.ready = False

    # ---- status ----------------------------------------------------------------------------------
    def _condition(self, state: PodState, kind: str, value: bool) -> dict[str, Any]:
        text = "True" if value else "False"
        previous = state.transitions.get(kind)
        since = previous[1] if previous and previous[0] == text and previous[1] else now_text()
        state.transitions[kind] = (text, since)
        return {"type": kind, "status": text, "lastProbeTime": None, "lastTransitionTime": since}

    async def write_status(self, state: PodState, pod: dict[str, Any]) -> None:
        spec, current = pod["spec"], pod.get("status") or {}
        running = state.started_at is not None and (not state.runnable or self.table.alive(state.key))
        ready = running and state.ready
        gates = [g.get("conditionType") for g in spec.get("readinessGates") or []]
        gate_conditions = {c.get("type"): c.get("status") for c in current.get("conditions") or []}
        pod_ready = ready and all(gate_conditions.get(g) == "True" for g in gates)
        containers = []
        for container in spec["containers"]:
            status: dict[str, Any] = {
                "name": container["name"],
                "image": container.get("image", ""),
                "imageID": "",
                "ready": ready,
                "restartCount": state.restarts,
                "started": running,
            }
            if running:
                status["containerID"] = f"outpost-sandbox://{state.key}"
                status["state"] = {"running": {"startedAt": state.started_at}}
            else:
                reason, message = state.waiting or ("ContainerCreating", "")
                status["state"] = {"waiting": {"reason": reason, "message": message}}
            if state.last_terminated:
                status["lastState"] = {"terminated": state.last_terminated}
            containers.append(status)
        conditions = [c for c in current.get("conditions") or [] if c.get("type") in ("PodScheduled", *gates)]
        conditions += [
            self._condition(state, "PodReadyToStartContainers", state.ip is not None),
            self._condition(state, "Initialized", True),
            self._condition(state, "ContainersReady", ready),
            self._condition(state, "Ready", pod_ready),
        ]
        status_doc: dict[str, Any] = {
            "phase": "Running" if running or state.restarts or state.last_terminated else "Pending",
            "conditions": conditions,
            "containerStatuses": containers,
            "hostIP": NODE_IP,
            "hostIPs": [{"ip": NODE_IP}],
            "startTime": current.get("startTime") or now_text(),
            "qosClass": current.get("qosClass"),
        }
        if state.ip:
            status_doc["podIP"], status_doc["podIPs"] = state.ip, [{"ip": state.ip}]
        if status_doc == state.last_status:
            return
        path = f"/api/v1/namespaces/{state.namespace}/pods/{state.name}/status"
        try:
            await self.kube.run(lambda k: k.merge_patch(path, {"status": status_doc}))
            state.last_status = status_doc
        except SandboxApiError as exc:
            if exc.status != 404:
                log.warning("pod %s/%s: status update failed: %s", state.namespace, state.name, exc)

    # ---- termination -----------------------------------------------------------------------------
    async def terminate(self, state: PodState, pod: dict[str, Any] | None) -> None:
        grace = 30.0
        if pod is not None:
            grace = float(
                pod["metadata"].get("deletionGracePeriodSeconds")
                or pod["spec"].get("terminationGracePeriodSeconds")
                or 30
            )
        try:
            if state.frozen:
                runtime.signal_process(self.table, state.key, signal.SIGCONT)
            await asyncio.to_thread(self.table.stop, state.key, max(grace, 0.1), grace <= 0)
            shared = state.netns == podnet.NODE_NETNS  # the node's network outlives its pods
            if state.relay is not None and not shared:
                state.relay.close()
            if state.netns is not None and state.ip is not None and not shared:
                await asyncio.to_thread(podnet.delete, state.ip)
            shutil.rmtree(self.pod_dir(state), ignore_errors=True)
            if pod is not None:
                path = f"/api/v1/namespaces/{state.namespace}/pods/{state.name}"
                with contextlib.suppress(SandboxApiError):
                    await self.kube.run(lambda k: k.delete(path, {"gracePeriodSeconds": "0"}))
            log.info("pod %s/%s: terminated", state.namespace, state.name)
        finally:
            self.pods.pop(state.uid, None)

    async def cleanup_orphans(self) -> None:
        """Networks and processes a previous instance left for pods that no longer exist on this node."""
        listed = await self.kube.run(_pods_on_node)
        live_ips = {(p.get("status") or {}).get("podIP") for p in listed.get("items") or []}
        live_keys = {f"{p['metadata']['namespace']}_{p['metadata']['name']}" for p in listed.get("items") or []}
        for ns in await asyncio.to_thread(podnet.existing):
            ip = str(podnet.POD_RANGE.network_address + int(ns.removeprefix(podnet.NETNS_PREFIX)))
            if ip not in live_ips:
                await asyncio.to_thread(podnet.delete, ip)
        run_dir = self.dir / "run"
        for record in run_dir.glob("*.json") if run_dir.exists() else []:
            if record.stem not in live_keys:
                await asyncio.to_thread(self.table.stop, record.stem, 5.0)

    async def run(self, ready_file: Path) -> None:
        while True:
            try:
                await self.cleanup_orphans()
                break
            except SandboxApiError as exc:
                log.warning("waiting for the API server: %s", exc)
                await asyncio.sleep(2)
        await self.start_node_services()
        try:
            await asyncio.gather(self.node_loop(), self.sync_loop(ready_file), self.probe_loop())
        finally:
            ready_file.unlink(missing_ok=True)
            if self.pod_resources is not None:
                self.pod_resources.stop(0)
            await self.kube.aclose()


def _pods_on_node(kube: Kube) -> Any:
    return kube.get("/api/v1/pods", fieldSelector=f"spec.nodeName={NODE_NAME}")


def _register(node: dict[str, Any], kube: Kube) -> None:
    """The Node object and its status, as a kubelet registers and reports its node."""
    kube.apply(node)
    kube.apply(node, subresource="status")


def _renew_node_lease(kube: Kube) -> None:
    """The node's Lease in kube-node-lease, owned by the Node (as the kubelet's), renewed now."""
    uid = kube.get(f"/api/v1/nodes/{NODE_NAME}")["metadata"]["uid"]
    kube.apply(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": NODE_NAME,
                "namespace": "kube-node-lease",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": NODE_NAME, "uid": uid}],
            },
            "spec": {
                "holderIdentity": NODE_NAME,
                "leaseDurationSeconds": NODE_LEASE_S,
                "renewTime": format_time(dt.datetime.now(dt.UTC), micro=True),
            },
        }
    )


async def probe_succeeds(probe: Probe, ip: str) -> bool:
    """One readiness probe as the kubelet runs it: a TCP connect, or an HTTP GET whose status is 200-399."""
    try:
        async with asyncio.timeout(probe.timeout):
            context = None
            if probe.scheme == "HTTPS":
                # As the kubelet's probes do: they check that the endpoint answers, not who it is.
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            reader, writer = await asyncio.open_connection(ip, probe.port, ssl=context)
            try:
                if probe.kind == "tcp":
                    return True
                writer.write(
                    f"GET {probe.path} HTTP/1.1\r\nHost: {ip}:{probe.port}\r\n"
                    "User-Agent: kube-probe/1.37\r\nAccept: */*\r\nConnection: close\r\n\r\n".encode()
                )
                await writer.drain()
                line = await reader.readline()
            finally:
                writer.close()
    except (OSError, TimeoutError, ssl.SSLError):
        return False
    parts = line.split()
    return len(parts) >= 2 and parts[1].isdigit() and 200 <= int(parts[1]) < 400


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m outpost_sandbox.kubelet")
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--bin-dir", type=Path, required=True)
    parser.add_argument("--ca-file", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    kubelet = Kubelet(args.state_dir, args.kubeconfig, args.bin_dir, args.ca_file)
    ready = kubelet.dir / "kubelet.ready"
    ready.unlink(missing_ok=True)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(kubelet.run(ready))
    return 0
