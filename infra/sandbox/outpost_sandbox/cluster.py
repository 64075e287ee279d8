"""The sandbox control plane: real etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
kwok, run as local processes from binaries built by `infra/sandbox/go/build.sh`.

Guarantees:
- Everything listens on 127.0.0.1 only, on ports picked free at first start and remembered in
  `<state>/sandbox.json`; nothing is exposed beyond loopback.
- `up` returns only when the API server's /readyz is 200, the controller manager and scheduler
  answer /healthz, and all N fake nodes are Ready. Any failure raises `SandboxError` naming the
  component, with the tail of that component's log attached: it never reports "up" on a guess.
- `up` is idempotent: a running sandbox is left alone ("already up"); a partly running one has
  only its stopped components started again (the same data, certificates and ports).
- `down` stops exactly the processes this sandbox started (pid + kernel start time, see
  `procs`), in reverse dependency order.
- Probes see the public serving certificate on https://127.0.0.1:PORT; the control plane's own
  clients connect to https://localhost:PORT and get a separate certificate by SNI. So the
  "expired certificate" fault (`rotate_apiserver_cert`) breaks what observers see and not the
  cluster itself, the way an expired certificate in front of a real cluster would.
- Secrets (tokens) are read from files and never logged; argv and logs carry only paths.

Network plan (shared with `outpost_sandbox.backends`): pod IPs come from 10.244.0.0/16 (kwok
--cidr); fake node `kwok-node-<i>` has InternalIP 10.245.0.0 + i + 1; services use 10.96.0.0/16.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import ipaddress
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from outpost.errors import MalformedResponse, OutpostError
from outpost.kube.objects import Node, parse_items
from outpost.kube.paths import object_path
from outpost.kube.timestamps import parse_time
from outpost.tooling import rbac
from outpost_sandbox import systems
from outpost_sandbox.backends.kube import FIELD_MANAGER, Kube, SandboxApiError
from outpost_sandbox.kubelet.daemon import NODE_NAME as PROCESS_NODE
from outpost_sandbox.kubelet.images import built_versions
from outpost_sandbox.kwok_stages import STAGES_YAML
from outpost_sandbox.pki import PKI
from outpost_sandbox.poll import poll_until
from outpost_sandbox.procs import ProcessTable, tail

KUBERNETES_VERSION = "v1.37.2"
BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
    "kruise-manager",
    "koord-manager",
    "koord-scheduler",
    "koord-descheduler",
)

POD_CIDR = "10.244.0.0/16"
NODE_IP_BASE = ipaddress.IPv4Address("10.245.0.0")
SERVICE_CIDR = "10.96.0.0/16"
# Written only into the `kubernetes` Endpoints (the API server rejects loopback there); the API
# server binds 127.0.0.1, and nothing in the sandbox dials this address. Reserved: no fake node
# gets it (nodes count up from 10.245.0.1).
ADVERTISE_ADDRESS = "10.245.255.254"
MAX_NODES = 65000
NODE_LEASE_SECONDS = 40
"""The kubelet's default nodeLeaseDurationSeconds, which kwok uses up to `SCALE_PROFILES[0].max_nodes`."""


@dataclass(frozen=True)
class ScaleProfile:
    """How the control plane and kwok are tuned for a sandbox of up to `max_nodes` fake nodes.

    Why: every fake node costs the one machine what a real node costs a real control plane, above all
    its Lease renewal (a kubelet renews every leaseDuration/4 = 10 s: 5,000 nodes are 500 writes a
    second, each fanned out to every Lease watcher). A real 5,000-node control plane has many cores
    for that; this one has 2, so past a few hundred nodes the renewals queue behind each other, Leases
    lag past --node-monitor-grace-period and the node lifecycle controller marks healthy nodes
    NotReady (and their pods NotReady with them). Large clusters are tuned exactly here: a longer
    node lease (kubelet `nodeLeaseDurationSeconds`) with a grace period and startup grace to match
    (kube-controller-manager `--node-monitor-grace-period`, `--node-startup-grace-period`), more
    workers where work queues up behind API latency, more client QPS for the controllers that
    create and bind one pod per node. Each tier keeps the renewal rate (4 x nodes / lease) at or
    under ~50 writes a second. `None` leaves the component's own default.

    The first tier is the sandbox as it always was (kubelet and controller-manager defaults): the
    e2e tests and every fault run there, so failure detection keeps its real timing (a Lease is
    stale after 40 s, the node NotReady 50 s after its last renewal).
    """

    max_nodes: int
    node_lease_seconds: int
    """kwok --node-lease-duration-seconds (kubelet nodeLeaseDurationSeconds); kwok renews every quarter."""
    node_monitor_grace_seconds: int | None = None
    """kube-controller-manager --node-monitor-grace-period (default 50 s against the default 40 s
    lease: 1.25 leases). Kept at 1.25 leases: as many missed renewals tolerated as upstream tolerates."""
    node_startup_grace_seconds: int | None = None
    """--node-startup-grace-period (default 60 s): how long a node created without a Ready condition
    may wait for kwok's first Lease and node-initialize; at 5,000 nodes kwok works through minutes of
    node creations, so it is at least the grace period."""
    node_monitor_period_seconds: int | None = None
    """--node-monitor-period (default 5 s): each pass walks every node; with minutes of grace, a
    pass every 10 s detects as well and costs half."""
    kwok_parallelism: int | None = None
    """kwok's nodeLeaseParallelism, nodePlayStageParallelism and podPlayStageParallelism (default 4
    each): its workers wait on the API server, and its client has no rate limit, so more workers
    hide latency instead of adding load. Needed at bring-up: 5,000 Leases, 5,000 node-initialize
    and 10,000 pod-ready patches."""
    scheduler_qps: tuple[int, int] | None = None
    """kube-scheduler --kube-api-qps/--kube-api-burst (default 50/100): one DaemonSet pod per node
    per DaemonSet is 10,000 bindings at 5,000 nodes, over 3 minutes at 50 a second."""
    install_timeout_seconds: float = 240.0
    """How long `up` waits for the extension systems to be ready (10,000 DaemonSet pods to create,
    bind and make Ready at 5,000 nodes)."""

    @property
    def kwok_ready_timeout_seconds(self) -> float:
        """How long a (re)started kwok may take to renew every node Lease: kwok v0.8.0 retries a Lease it failed
        to take over (its Lease cache not yet filled, it tries to create one that exists) a renew interval later,
        a quarter lease plus 4 % jitter (`node_lease_controller.go`): 100 s at a 400 s lease. A minute more for
        the rest; the component's own `ready_timeout` (90 s) stays the floor."""
        return self.node_lease_seconds / 4 * 1.04 + 60.0

    def controller_manager_flags(self) -> list[str]:
        flags = []
        if self.node_monitor_grace_seconds is not None:
            flags.append(f"--node-monitor-grace-period={self.node_monitor_grace_seconds}s")
        if self.node_startup_grace_seconds is not None:
            flags.append(f"--node-startup-grace-period={self.node_startup_grace_seconds}s")
        if self.node_monitor_period_seconds is not None:
            flags.append(f"--node-monitor-period={self.node_monitor_period_seconds}s")
        return flags

    def scheduler_flags(self) -> list[str]:
        if self.scheduler_qps is None:
            return []
        qps, burst = self.scheduler_qps
        return [f"--kube-api-qps={qps}", f"--kube-api-burst={burst}"]

    def kwok_configuration(self) -> str | None:
        """A KwokConfiguration document, or None to run kwok with its defaults.

        kwok applies no defaults to a configuration it loads from a file (v0.8.0 `config.Load`
        unmarshals and converts only), so every option is spelled out, the untuned ones with
        upstream's default values (`pkg/apis/config/v1alpha1/zz_generated.defaults.go`); the
        command-line flags still override cidr, the node selector and the lease duration.
        """
        if self.kwok_parallelism is None:
            return None
        options = {
            "cidr": POD_CIDR,
            "manageAllNodes": False,
            "enableDebuggingHandlers": True,
            "enableContentionProfiling": False,
            "enableProfilingHandler": True,
            "nodeLeaseParallelism": self.kwok_parallelism,
            "nodePlayStageParallelism": self.kwok_parallelism,
            "podPlayStageParallelism": self.kwok_parallelism,
            "podsOnNodeSyncParallelism": 1,
            "enablePodsOnNodeSyncListPager": True,
            "enablePodsOnNodeSyncStreamWatch": False,
        }
        return yaml.safe_dump(
            {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration", "options": options},
            sort_keys=False,
        )


SCALE_PROFILES = (
    # As upstream ships every default: what the e2e tests and faults run against (50 renewals/s at 500 nodes).
    ScaleProfile(max_nodes=500, node_lease_seconds=NODE_LEASE_SECONDS),
    # 160 s lease, renewed every 40 s: 50 renewals/s at 2,000 nodes.
    ScaleProfile(
        max_nodes=2000,
        node_lease_seconds=160,
        node_monitor_grace_seconds=200,
        node_startup_grace_seconds=200,
        kwok_parallelism=16,
        scheduler_qps=(100, 200),
        install_timeout_seconds=480.0,
    ),
    # 400 s lease, renewed every 100 s: 50 renewals/s at 5,000 nodes (measured on 2 cores; beyond
    # 5,000 the rate grows again and the machine, not this table, is the limit).
    ScaleProfile(
        max_nodes=MAX_NODES,
        node_lease_seconds=400,
        node_monitor_grace_seconds=500,
        node_startup_grace_seconds=500,
        node_monitor_period_seconds=10,
        kwok_parallelism=16,
        scheduler_qps=(100, 200),
        install_timeout_seconds=900.0,
    ),
)
KWOK_LEASE_DURATIONS = frozenset(profile.node_lease_seconds for profile in SCALE_PROFILES)
"""A node Lease with one of these durations is kwok's (a sandbox may have been grown from one tier to the next);
the node-lease-stale fault takes one over with a far longer one."""


def scale_profile(nodes: int) -> ScaleProfile:
    """The tuning for a sandbox that has (had) `nodes` fake nodes."""
    return next(profile for profile in SCALE_PROFILES if nodes <= profile.max_nodes)


# Seconds between SIGTERM and SIGKILL unless a component's spec says otherwise: etcd gets the full
# grace to close its database cleanly.
DEFAULT_STOP_GRACE = 20.0

FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
FAKE_NODE_TAINT = {"key": "kwok-controller/provider", "value": "fake", "effect": "NoSchedule"}
"""kwok's own fake node carries it (sigs.k8s.io/kwok@v0.8.0 test/kwok/fake-node.yaml), so that only pods meant for
fake nodes land there: upstream's manager Deployments tolerate nothing, and the scheduler puts them on the process
node (outpost_sandbox.kubelet), whose kubelet runs them."""
NODE_PREFIX = "kwok-node-"

Log = Callable[[str], None]
Argv = tuple[list[str], dict[str, str] | None]
"""A component's command line and its environment (None: inherit the launcher's)."""
Health = tuple[bool | None, str]
"""Healthy (None: the component has no health endpoint worth asking) and what was observed."""


MACHINE_CLAIM = Path(os.environ.get("OUTPOST_SANDBOX_CLAIM", "/run/outpost-sandbox.owner"))
"""Which sandbox owns this machine's backend network (see `Sandbox._claim_machine`)."""


def _stderr(msg: str) -> None:
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


def cache_root() -> Path:
    """Same rule as build.sh: $OUTPOST_CACHE, else $XDG_CACHE_HOME/outpost, else ~/.cache/outpost."""
    if os.environ.get("OUTPOST_CACHE"):
        return Path(os.environ["OUTPOST_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "outpost"


def build_script() -> Path:
    env = os.environ.get("OUTPOST_SANDBOX_BUILD_SCRIPT")
    if env:
        return Path(env)
    # infra/sandbox/outpost_sandbox/cluster.py -> infra/sandbox/go (the package sits beside its Go build)
    return Path(__file__).resolve().parents[1] / "go" / "build.sh"


def _complete(bin_dir: Path) -> bool:
    return (bin_dir / ".complete").is_file() and all(os.access(bin_dir / b, os.X_OK) for b in BINARIES)


def ensure_binaries(log: Log = _stderr) -> Path:
    """The directory holding the control-plane binaries, building them first if needed.

    `OUTPOST_SANDBOX_BIN_DIR` points at prebuilt binaries; otherwise build.sh runs (cached and fast
    after the first time), under a lock so two sandboxes never build at once.
    """
    env = os.environ.get("OUTPOST_SANDBOX_BIN_DIR")
    if env:
        bin_dir = Path(env)
        missing = [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]
        if missing:
            raise SandboxError(f"OUTPOST_SANDBOX_BIN_DIR {bin_dir} lacks executable {', '.join(missing)}", "build")
        return bin_dir
    script = build_script()
    if not script.is_file():
        raise SandboxError(f"sandbox build script not found at {script} (set OUTPOST_SANDBOX_BIN_DIR)", "build")
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with (root / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = time.monotonic()
        proc = subprocess.Popen([str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=3)
        except subprocess.TimeoutExpired:
            # Cached binaries answer within a second; anything longer is a real build.
            log(
                f"building control-plane binaries with {script} (first time: ~10 min; log in "
                f"{root / 'bin'}/<key>/build.log)"
            )
            out, err = proc.communicate()
        if proc.returncode != 0:
            raise SandboxError(
                f"building sandbox binaries failed with exit {proc.returncode} ({script})",
                "build",
                log_tail=err.strip()[-4000:],
            )
        lines = out.strip().splitlines()
        bin_dir = Path(lines[-1]) if lines else Path()
        if not lines or not _complete(bin_dir):
            raise SandboxError(
                f"build script {script} printed no complete binary directory", "build", log_tail=(out + err)[-4000:]
            )
        took = time.monotonic() - started
        if took > 5:
            log(f"binaries built in {took:.0f} s: {bin_dir}")
        return bin_dir


LISTEN_PORT_FLOOR = 20000
"""Lowest port the sandbox listens on; the registered-services range below it is left alone."""


def _ephemeral_port_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports below the kernel's ephemeral range.

    A component keeps its port across restarts (certificates and kubeconfigs name it). A port from
    the ephemeral range could be taken, while the component is down, as the source port of some
    outgoing connection, and the restart would then fail with "address already in use".
    """
    ceiling = _ephemeral_port_floor()
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


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _own_namespaces(manifests: list[dict[str, Any]]) -> set[str | None]:
    """Namespaces the probe's own manifests create (outpost.tooling.rbac): their grants go in with them, before any
    system; grants in a system's namespace wait for that namespace."""
    return {None, *(obj["metadata"]["name"] for obj in manifests if obj["kind"] == "Namespace")}


def _namespace_of(obj: dict[str, Any]) -> str | None:
    namespace = obj["metadata"].get("namespace")
    return str(namespace) if namespace else None


def node_name(index: int) -> str:
    return f"{NODE_PREFIX}{index}"


def node_ip(index: int) -> str:
    return str(NODE_IP_BASE + index + 1)


def node_manifest(index: int) -> dict[str, Any]:
    """A fake node as kwok expects it: the annotation selects it for kwok, the address is ours.

    Status is sent on create (as a kubelet registering itself does); kwok's node-initialize stage
    keeps an InternalIP already present, so every node gets a distinct 10.245.x.y.
    """
    name = node_name(index)
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/agent": "",
            },
        },
        "spec": {"taints": [dict(FAKE_NODE_TAINT)]},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": node_ip(index)},
                {"type": "Hostname", "address": name},
            ],
            "allocatable": dict(resources),
            "capacity": dict(resources),
        },
    }


@dataclass
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int

    @classmethod
    def allocate(cls) -> Ports:
        return cls(*_free_ports(5))

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


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    alive: bool
    pid: int | None
    healthy: bool | None  # None: no health endpoint worth asking (kwok's /healthz proves nothing)
    detail: str


@dataclass(frozen=True)
class SandboxStatus:
    state_dir: str
    exists: bool
    components: list[ComponentStatus] = field(default_factory=list)
    apiserver_readyz: int | None = None
    nodes_ready: int | None = None
    nodes_expected: int | None = None
    server: str | None = None

    @property
    def up(self) -> bool:
        return (
            self.exists
            and all(c.alive and c.healthy is not False for c in self.components)
            and self.apiserver_readyz == 200
            and self.nodes_ready is not None
            and self.nodes_expected is not None
            and self.nodes_ready >= self.nodes_expected
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["up"] = self.up
        return d


@dataclass(frozen=True)
class UpResult:
    state_dir: Path
    kubeconfig: Path
    probe_kubeconfig: Path
    server: str
    ca_path: Path
    bin_dir: Path
    nodes: int
    seconds: float
    already_up: bool

    def usage(self) -> str:
        how = "already up" if self.already_up else f"up in {self.seconds:.1f} s"
        built = built_versions(self.bin_dir)
        managers = ", ".join(f"{module.rsplit('/', 1)[-1]} {version}" for module, version in sorted(built.items()))
        return "\n".join(
            [
                f"sandbox {how}: {self.nodes} kwok nodes Ready, Kubernetes {KUBERNETES_VERSION}",
                f"  managers     {managers or 'none built'} (the real binaries, on node {PROCESS_NODE})",
                f"  API server   {self.server}  (CA {self.ca_path})",
                f"  admin        export KUBECONFIG={self.kubeconfig}",
                f"  probe        {self.probe_kubeconfig}  (user outpost-probe, read-only)",
                f"  reconciler   {self.state_dir / 'reconciler.kubeconfig'}  (user outpost-reconciler, "
                "kwok-pod-reconciler's patch pods/status)",
                f"  kubectl      {self.state_dir / 'bin' / 'kubectl'} --kubeconfig {self.kubeconfig} get nodes",
                f"  logs         {self.state_dir / 'logs'}/<component>.log",
                "  stop with    outpost sandbox down",
            ]
        )


class Sandbox:
    """One sandbox, identified by its state directory."""

    def __init__(self, state_dir: Path | str | None = None, log: Log = _stderr) -> None:
        self.state_dir = Path(state_dir).expanduser().resolve() if state_dir else default_state_dir()
        self.log = log
        self.pki = PKI(self.state_dir / "pki")
        self.procs = ProcessTable(self.state_dir / "run", self.state_dir / "logs")

    # Paths and credentials ---------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def probe_kubeconfig(self) -> Path:
        return self.state_dir / "probe.kubeconfig"

    @property
    def reconciler_kubeconfig(self) -> Path:
        """The `kwok-pod-reconciler` job's own write identity (`outpost-reconciler`, outpost.tooling.rbac)."""
        return self.state_dir / "reconciler.kubeconfig"

    @property
    def ca_path(self) -> Path:
        return self.pki.ca_cert

    @property
    def _state_file(self) -> Path:
        return self.state_dir / "sandbox.json"

    def load_state(self) -> State | None:
        try:
            return State.from_json(self._state_file.read_text())
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            raise SandboxError(f"sandbox state file {self._state_file} is unreadable: {exc}") from exc

    def _require_state(self) -> State:
        state = self.load_state()
        if state is None:
            raise SandboxError(f"no sandbox at {self.state_dir} (run `outpost sandbox up` first)")
        return state

    def _save_state(self, state: State) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self._state_file.with_suffix(".tmp")
        tmp.write_text(state.to_json())
        os.replace(tmp, self._state_file)

    def server(self) -> str:
        """The URL probes use (public serving certificate)."""
        return f"https://127.0.0.1:{self._require_state().ports.apiserver}"

    def probe_token(self) -> str:
        return self.pki.token("outpost-probe")

    def admin_token(self) -> str:
        return self.pki.token("admin")

    def log_path(self, component: str) -> Path:
        return self.procs.log_path(component)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with (self.state_dir / ".lock").open("w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    # Internal API access -----------------------------------------------------------------------
    def _api(self, state: State, timeout: float = 10.0) -> Kube:
        """The admin's access to the API server through the product's client.

        localhost => SNI "localhost" => the internal certificate, valid whatever fault is injected
        into the public one.
        """
        return Kube.for_server(
            f"https://localhost:{state.ports.apiserver}", self.pki.ca_cert, self.admin_token(), timeout=timeout
        )

    def _readyz(self, state: State) -> int | None:
        try:
            with self._api(state, timeout=5) as api:
                return api.raw("/readyz", timeout=5).status_code
        except SandboxApiError:
            return None

    def _component_health(self, state: State, name: str) -> Health:
        try:
            return COMPONENT_SPECS[name].health(self, state)
        except (SandboxApiError, MalformedResponse) as exc:
            return False, f"health endpoint unreachable: {type(exc).__name__}"

    def _etcd_health(self, state: State) -> Health:
        # etcd is not a Kubernetes API server and its loopback client port speaks plain http with no
        # credential, so it is asked directly rather than through the cluster client (https only).
        try:
            r = httpx.get(f"http://127.0.0.1:{state.ports.etcd_client}/health", timeout=5, trust_env=False)
        except httpx.HTTPError as exc:
            raise SandboxApiError(f"GET etcd /health: no answer ({type(exc).__name__})") from None
        try:
            body = r.json()
        except ValueError:
            body = None
        ok = r.status_code == 200 and isinstance(body, dict) and body.get("health") == "true"
        return ok, f"/health {r.status_code}"

    def _apiserver_health(self, state: State) -> Health:
        code = self._readyz(state)
        return code == 200, f"/readyz {code if code is not None else 'unreachable'}"

    def _controller_manager_health(self, state: State) -> Health:
        return self._healthz(state.ports.controller_manager)

    def _scheduler_health(self, state: State) -> Health:
        return self._healthz(state.ports.scheduler)

    def _healthz(self, port: int) -> Health:
        """/healthz of a component serving with the sandbox's `components` certificate."""
        with Kube.for_server(f"https://127.0.0.1:{port}", self.pki.ca_cert, timeout=5) as component:
            r = component.raw("/healthz", timeout=5)
        return r.status_code == 200, f"/healthz {r.status_code}"

    def _kwok_health(self, _state: State) -> Health:
        return None, "process only (kwok's /healthz proves nothing)"

    def _error(self, message: str, component: str) -> SandboxError:
        path = self.procs.log_path(component)
        return SandboxError(message, component, log_tail=tail(path, 40), log_path=path)

    def _wait(
        self,
        what: str,
        component: str,
        timeout: float,
        predicate: Callable[[], bool],
        watch: tuple[str, ...] = (),
        interval: float = 0.5,
    ) -> None:
        """Poll `predicate` until true; fail fast if a watched process dies, name `component` on
        timeout."""

        def watched_alive_and_true() -> bool:
            for name in watch:
                if not self.procs.alive(name):
                    raise self._error(f"{name} exited while waiting for {what}", name)
            return predicate()

        poll_until(
            what,
            timeout,
            watched_alive_and_true,
            interval=interval,
            fail=lambda message: self._error(message, component),
        )

    # Configuration files -----------------------------------------------------------------------
    def _kubeconfig_text(self, server: str, user: str, token: str, context: str) -> str:
        import base64

        ca = base64.b64encode(self.pki.ca_cert.read_bytes()).decode()
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "outpost-sandbox", "cluster": {"server": server, "certificate-authority-data": ca}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": context, "context": {"cluster": "outpost-sandbox", "user": user}}],
            "current-context": context,
        }
        return yaml.safe_dump(doc, sort_keys=False)

    def _write_secret_file(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)

    def _write_configs(self, state: State) -> None:
        public = f"https://127.0.0.1:{state.ports.apiserver}"
        internal = f"https://localhost:{state.ports.apiserver}"
        self._write_secret_file(
            self.kubeconfig, self._kubeconfig_text(public, "admin", self.admin_token(), "outpost-sandbox")
        )
        self._write_secret_file(
            self.probe_kubeconfig,
            self._kubeconfig_text(public, "outpost-probe", self.probe_token(), "outpost-sandbox-probe"),
        )
        self._write_secret_file(
            self.reconciler_kubeconfig,
            self._kubeconfig_text(
                public, rbac.RECONCILER_USER, self.pki.token(rbac.RECONCILER_USER), "outpost-sandbox-reconciler"
            ),
        )
        kdir = self.state_dir / "kubeconfigs"
        for comp, user in (
            ("kube-controller-manager", "system:kube-controller-manager"),
            ("kube-scheduler", "system:kube-scheduler"),
            ("kwok", "kwok-controller"),
            ("admin-internal", "admin"),
        ):
            self._write_secret_file(
                kdir / f"{comp}.kubeconfig", self._kubeconfig_text(internal, user, self.pki.token(user), comp)
            )
        kwok_dir = self.state_dir / "kwok"
        kwok_dir.mkdir(parents=True, exist_ok=True)
        (kwok_dir / "stages.yaml").write_text(STAGES_YAML)
        kwok_configuration = scale_profile(state.nodes).kwok_configuration()
        if kwok_configuration is None:
            (kwok_dir / "kwok.yaml").unlink(missing_ok=True)
        else:
            (kwok_dir / "kwok.yaml").write_text(kwok_configuration)
        link = self.state_dir / "bin"
        if link.is_symlink() or link.exists():
            if link.is_symlink() and os.readlink(link) == state.bin_dir:
                return
            link.unlink()
        link.symlink_to(state.bin_dir)

    def _serving_flags(self, kubeconfig: Path, port: int) -> list[str]:
        """Client and serving flags shared by the controller manager and the scheduler."""
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={self.pki.cert('components')}",
            f"--tls-private-key-file={self.pki.key('components')}",
        ]

    def _etcd_argv(self, state: State) -> Argv:
        b, p, sd = Path(state.bin_dir), state.ports, self.state_dir
        peer = f"http://127.0.0.1:{p.etcd_peer}"
        client = f"http://127.0.0.1:{p.etcd_client}"
        return [
            str(b / "etcd"),
            "--name=sandbox",
            f"--data-dir={sd / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=sandbox={peer}",
            # A throwaway cluster: durability buys nothing and fsync dominates start time.
            "--unsafe-no-fsync",
            "--quota-backend-bytes=8589934592",
            "--log-level=warn",
        ], None

    def _apiserver_argv(self, state: State) -> Argv:
        b, p, pki, sd = Path(state.bin_dir), state.ports, self.pki, self.state_dir
        return [
            str(b / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{p.etcd_client}",
            "--bind-address=127.0.0.1",
            f"--secure-port={p.apiserver}",
            f"--advertise-address={state.advertise_address}",
            f"--cert-dir={sd / 'apiserver'}",
            f"--tls-cert-file={pki.cert('apiserver')}",
            f"--tls-private-key-file={pki.key('apiserver')}",
            f"--tls-sni-cert-key={pki.cert('apiserver-internal')},{pki.key('apiserver-internal')}:localhost",
            f"--client-ca-file={pki.ca_cert}",
            f"--requestheader-client-ca-file={pki.ca_cert}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki.cert('front-proxy-client')}",
            f"--proxy-client-key-file={pki.key('front-proxy-client')}",
            f"--token-auth-file={pki.token_file}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--enable-priority-and-fairness=true",
            # No kube-proxy: the API server calls webhooks and proxies to Services on their ready endpoints,
            # as it does for aggregated APIs (a dead manager then reads "connection refused" on its pod IP).
            "--enable-aggregator-routing=true",
            "--allow-privileged=true",
            f"--kubelet-client-certificate={pki.cert('kubelet-client')}",
            f"--kubelet-client-key={pki.key('kubelet-client')}",
            # Fake node hostnames do not resolve; the node proxy must dial the InternalIP.
            "--kubelet-preferred-address-types=InternalIP,Hostname",
        ], None

    def _controller_manager_argv(self, state: State) -> Argv:
        b, p, pki, kc = Path(state.bin_dir), state.ports, self.pki, self.state_dir / "kubeconfigs"
        return [
            str(b / "kube-controller-manager"),
            *self._serving_flags(kc / "kube-controller-manager.kubeconfig", p.controller_manager),
            # One instance per sandbox: leader election would only make it exit when a fault
            # stops the API server for longer than the lease.
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki.sa_key}",
            f"--root-ca-file={pki.ca_cert}",
            f"--cluster-signing-cert-file={pki.ca_cert}",
            f"--cluster-signing-key-file={pki.ca_key}",
            "--allocate-node-cidrs=false",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # No cloud and no kubelets: node IPAM (pod IPs come from kwok) and attach/detach
            # (needs a kubelet/CSI) have nothing to act on.
            "--controllers=*,-node-ipam-controller,-persistentvolume-attach-detach-controller",
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            *scale_profile(state.nodes).controller_manager_flags(),
        ], None

    def _scheduler_argv(self, state: State) -> Argv:
        b, p, kc = Path(state.bin_dir), state.ports, self.state_dir / "kubeconfigs"
        return [
            str(b / "kube-scheduler"),
            *self._serving_flags(kc / "kube-scheduler.kubeconfig", p.scheduler),
            "--leader-elect=false",
            *scale_profile(state.nodes).scheduler_flags(),
        ], None

    def _kwok_argv(self, state: State) -> Argv:
        b, sd, kc = Path(state.bin_dir), self.state_dir, self.state_dir / "kubeconfigs"
        env = dict(os.environ)
        # kwok also reads ~/.kwok/kwok.yaml if present; a private work dir keeps a user's own
        # kwok setup out of the sandbox.
        env["KWOK_WORKDIR"] = str(sd / "kwok")
        profile = scale_profile(state.nodes)
        configs = [sd / "kwok" / "stages.yaml"]
        if profile.kwok_configuration() is not None:
            configs.append(sd / "kwok" / "kwok.yaml")
        return [
            str(b / "kwok"),
            f"--kubeconfig={kc / 'kwok.kubeconfig'}",
            *(f"--config={path}" for path in configs),
            f"--manage-nodes-with-annotation-selector={FAKE_NODE_ANNOTATION}=fake",
            f"--cidr={POD_CIDR}",
            f"--node-lease-duration-seconds={profile.node_lease_seconds}",
            # At INFO kwok logs every lease renewal (5000 nodes: ~500 JSON lines a second),
            # which costs more CPU than the simulation itself.
            "-v=WARN",
        ], env

    # Lifecycle ---------------------------------------------------------------------------------
    def up(self, nodes: int = 100, timeout: float | None = None, install_systems: bool = True) -> UpResult:
        """Bring the sandbox up (or confirm it is up) with `nodes` fake nodes Ready."""
        if not 0 < nodes <= MAX_NODES:
            raise SandboxError(f"node count {nodes} out of range 1..{MAX_NODES}")
        started = time.monotonic()
        with self._locked():
            state = self.load_state()
            if (
                state is not None
                and all(self.procs.alive(c) for c in COMPONENTS)
                and self._readyz(state) == 200
                and self._nodes_ready(state, nodes) >= nodes
                and (not install_systems or systems.running(self.state_dir))
            ):
                # The generated RBAC follows the code, not the day the sandbox came up: re-applied (server-side, so
                # a rule no longer generated leaves its role; the dry-run policy included).
                probe_rbac = rbac.manifests()
                own = _own_namespaces(probe_rbac)
                self._apply(state, [obj for obj in probe_rbac if install_systems or _namespace_of(obj) in own])
                self._apply(state, rbac.reconciler_manifests())
                return self._result(state, nodes, time.monotonic() - started, already_up=True)
            self._claim_machine()
            bin_dir = ensure_binaries(self.log)
            any_alive = any(self.procs.alive(c) for c in COMPONENTS)
            retune: list[str] = []
            if state is None:
                state = State(ports=Ports.allocate(), bin_dir=str(bin_dir), nodes=nodes)
            else:
                if scale_profile(max(state.nodes, nodes)) != scale_profile(state.nodes):
                    # Grown into the next tier in place: the components tuned by node count are restarted
                    # with its flags before the new nodes come (kwok releases its Leases on the way, so
                    # the new kwok takes every one over at once, with the new duration).
                    retune = [name for name in TUNED_COMPONENTS if self.procs.alive(name)]
                if not any_alive:
                    # Nothing of ours runs: pick the binaries just built and move off any port
                    # someone else took meanwhile.
                    state.bin_dir = str(bin_dir)
                    if not all(_port_free(port) for port in state.ports.all()):
                        state.ports = Ports.allocate()
                state.nodes = max(state.nodes, nodes)
            self.pki.ensure(state.advertise_address)
            self._save_state(state)
            self._write_configs(state)
            if retune:
                self.log(
                    f"retuning {', '.join(retune)} for {state.nodes} nodes "
                    f"(node lease {scale_profile(state.nodes).node_lease_seconds} s)"
                )
            for name in reversed(retune):
                self.procs.stop(name, timeout=COMPONENT_SPECS[name].stop_grace)
            for name in COMPONENTS:
                if not self.procs.alive(name):
                    self._start(name, state)
            self._ensure_nodes(state, nodes, timeout)
            self._wait(
                "the default ServiceAccount",
                "kube-controller-manager",
                60,
                lambda: self._get_ok(state, "/api/v1/namespaces/default/serviceaccounts/default"),
                watch=("kube-controller-manager",),
            )
            # Grants in a system's namespace (e.g. the webhook certificate Secrets) need that namespace: they
            # are applied once the systems are installed. The probe's own namespace comes with its grants.
            # The probe's RBAC is what `outpost rbac --env local` generates from the enabled checks.
            probe_rbac = rbac.manifests()
            own = _own_namespaces(probe_rbac)
            self._apply(state, [obj for obj in probe_rbac if _namespace_of(obj) in own])
            self._apply(state, rbac.reconciler_manifests())
        if install_systems:
            self._install_systems(scale_profile(state.nodes).install_timeout_seconds)
            with self._locked():
                self._apply(state, [obj for obj in probe_rbac if _namespace_of(obj) not in own])
        return self._result(state, nodes, time.monotonic() - started, already_up=False)

    def _result(self, state: State, nodes: int, seconds: float, already_up: bool) -> UpResult:
        return UpResult(
            state_dir=self.state_dir,
            kubeconfig=self.kubeconfig,
            probe_kubeconfig=self.probe_kubeconfig,
            server=f"https://127.0.0.1:{state.ports.apiserver}",
            ca_path=self.ca_path,
            bin_dir=Path(state.bin_dir),
            nodes=nodes,
            seconds=seconds,
            already_up=already_up,
        )

    def _start(self, name: str, state: State, wait: bool = True) -> None:
        spec = COMPONENT_SPECS[name]
        if spec.before_start is not None:
            spec.before_start(self, state)
        argv, env = spec.argv(self, state)
        self.procs.start(name, argv, env=env, cwd=self.state_dir)
        if wait:
            self._wait_healthy(name, state)

    def _before_kwok_start(self, state: State) -> None:
        if self.procs.alive("kube-apiserver"):
            self._release_node_leases(state)

    def _release_node_leases(self, state: State) -> None:
        """Release the node Leases a stopped kwok held, as a leader releases its lease on shutdown.

        Every kwok process has a fresh identity, and would otherwise wait out the old holder's
        40 s before it may renew. Leases someone else took over are left alone.
        """
        with self._api(state, timeout=30) as api:
            try:
                leases = self._kwok_node_leases(api)
            except SandboxApiError:
                return
            if leases is None:
                return  # nothing to hand over; kwok then waits the leases out
            held = [lease["metadata"]["name"] for lease in leases if lease["spec"].get("holderIdentity")]

            def release(name: str) -> None:
                # Best effort: a lease not released is only waited out by kwok.
                with contextlib.suppress(SandboxApiError):
                    api.merge_patch(
                        f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}",
                        {"spec": {"holderIdentity": None}},
                    )

            with ThreadPoolExecutor(max_workers=16) as pool:
                list(pool.map(release, held))

    def _wait_healthy(self, name: str, state: State) -> None:
        spec = COMPONENT_SPECS[name]
        if spec.ready_when is not None:
            ready = spec.ready_when(self, state)
        else:

            def ready() -> bool:
                return self._component_health(state, name)[0] is True

        timeout = spec.ready_timeout
        if spec.scaled_timeout is not None:
            timeout = max(timeout, spec.scaled_timeout(scale_profile(state.nodes)))
        self._wait(spec.ready_what, name, timeout, ready, watch=(*spec.requires_running, name))

    def _kwok_ready_when(self, state: State) -> Callable[[], bool]:
        """kwok has no health endpoint: it is working once it has renewed every node Lease it holds
        since it started (none exist yet on a first start)."""
        started = dt.datetime.now(dt.UTC)
        return lambda: self._node_leases_renewed_since(state, started)

    @staticmethod
    def _kwok_node_leases(api: Kube) -> list[dict[str, Any]] | None:
        """The node Leases kwok is to renew, held or released, or None if they could not be listed.

        A Lease with a duration no scale profile gives kwok is not kwok's: the node-lease-stale fault
        takes one over with a long one; nor is the process node's, which its own kubelet renews. A released
        Lease is, and counts: a new kwok sometimes fails to take one over on its first try (its Lease cache is
        not filled yet) and retries only later.
        """
        try:
            leases = api.list("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
        except SandboxApiError as exc:
            if exc.status == 0:
                raise  # no answer at all: the caller decides
            return None
        return [
            lease
            for lease in leases
            if (lease.get("spec") or {}).get("leaseDurationSeconds") in KWOK_LEASE_DURATIONS
            and lease["metadata"]["name"] != PROCESS_NODE
        ]

    def _node_leases_renewed_since(self, state: State, since: dt.datetime) -> bool:
        with self._api(state, timeout=30) as api:
            leases = self._kwok_node_leases(api)
        if leases is None:
            return False
        for lease in leases:
            renewed = parse_time(lease["spec"].get("renewTime"))
            if renewed is None or renewed < since:
                return False
        return True

    def _restart_watchers(self, state: State) -> None:
        """After etcd or the API server came back: fresh watchers once /readyz is 200."""
        if not self.procs.alive("kube-apiserver"):
            return  # started later, that start restarts them
        self._wait_healthy("kube-apiserver", state)
        for spec in COMPONENT_SPECS.values():
            if spec.watcher and self.procs.alive(spec.name):
                self.procs.stop(spec.name, timeout=spec.stop_grace)
                self._start(spec.name, state)

    def _get_ok(self, state: State, path: str) -> bool:
        try:
            with self._api(state) as api:
                return api.raw(path).status_code == 200
        except SandboxApiError:
            return False

    def _list_nodes(self, state: State) -> list[dict[str, Any]]:
        with self._api(state, timeout=30) as api:
            return api.list("/api/v1/nodes", label_selector="type=kwok")

    def _nodes_ready(self, state: State, nodes: int) -> int:
        wanted = {node_name(i) for i in range(nodes)}
        try:
            items = self._list_nodes(state)
        except SandboxApiError:
            return 0
        return sum(1 for node in parse_items(Node, items, "nodes-ready") if node.name in wanted and node.ready)

    def _ensure_nodes(self, state: State, nodes: int, timeout: float | None) -> None:
        listed = self._list_nodes(state)
        existing = {n["metadata"]["name"] for n in listed}
        untainted = [
            n["metadata"]["name"] for n in listed if FAKE_NODE_TAINT not in ((n.get("spec") or {}).get("taints") or [])
        ]
        if untainted:  # made by a sandbox version that did not taint them
            with self._api(state, timeout=60) as api:
                for name in untainted:
                    node = api.get(f"/api/v1/nodes/{name}")
                    taints = [*((node.get("spec") or {}).get("taints") or []), dict(FAKE_NODE_TAINT)]
                    api.merge_patch(f"/api/v1/nodes/{name}", {"spec": {"taints": taints}})
        missing = [i for i in range(nodes) if node_name(i) not in existing]
        if missing:
            self.log(f"creating {len(missing)} fake nodes")
            with self._api(state, timeout=60) as api:

                def create(i: int) -> str | None:
                    try:
                        api.create("/api/v1/nodes", node_manifest(i))
                    except SandboxApiError as exc:
                        if exc.status == 409:
                            return None  # already there: `up` converges
                        return f"node {node_name(i)}: create answered {exc.status}: {exc}"
                    return None

                with ThreadPoolExecutor(max_workers=16) as pool:
                    failures = [f for f in pool.map(create, missing) if f]
            if failures:
                raise self._error(
                    f"{len(failures)} fake nodes could not be created; first: {failures[0]}", "kube-apiserver"
                )
        # Measured on 2 cores: 100 nodes Ready in ~2 s; 5000 take minutes (lease writes compete
        # with node creation), so the default grows with the count.
        limit = timeout if timeout is not None else 90 + nodes * 0.12
        last_report = [time.monotonic()]

        def all_ready() -> bool:
            ready = self._nodes_ready(state, nodes)
            if ready < nodes and time.monotonic() - last_report[0] > 20:
                last_report[0] = time.monotonic()
                self.log(f"{ready}/{nodes} fake nodes Ready")
            return ready >= nodes

        # Each try lists every node (about 4 KB each): at 5,000 nodes a list every half second would
        # take a core of its own from the components it waits for.
        self._wait(
            f"{nodes} fake nodes Ready",
            "kwok",
            limit,
            all_ready,
            watch=("kube-apiserver", "kwok"),
            interval=max(0.5, nodes / 1000),
        )

    def _apply(self, state: State, objects: list[dict[str, Any]]) -> None:
        """Server-side apply: creates or updates, so re-running `up` converges."""
        with self._api(state) as api:
            for obj in objects:
                policy = rbac.ADMISSION_POLICY_KINDS.get(obj["kind"])  # the probe's dry-run policy: its own kinds
                try:
                    if policy is None:
                        api.apply(obj)
                    else:
                        api.writer.apply(object_path(policy, obj["metadata"]["name"]), obj, field_manager=FIELD_MANAGER)
                except SandboxApiError as exc:
                    raise self._error(
                        f"applying {obj['kind']} {obj['metadata']['name']} answered {exc.status}", "kube-apiserver"
                    ) from None
                except OutpostError as exc:
                    raise self._error(
                        f"applying {obj['kind']} {obj['metadata']['name']}: {exc}", "kube-apiserver"
                    ) from None

    def _claim_machine(self) -> None:
        """Only one sandbox per machine: the backend network (namespace, veth, the pod and node CIDR
        routes) is machine-wide, so a second sandbox would silently take the first one's backends.
        The claim names the owner's state directory, so the refusal says which sandbox to stop."""
        if MACHINE_CLAIM.exists():
            owner = Path(MACHINE_CLAIM.read_text().strip())
            if owner != self.state_dir and Sandbox(owner, log=self.log).procs.alive("kube-apiserver"):
                raise SandboxError(
                    f"another sandbox is running on this machine (state dir {owner}); "
                    f"stop it first: outpost sandbox down --state-dir {owner}",
                    "sandbox",
                )
        MACHINE_CLAIM.parent.mkdir(parents=True, exist_ok=True)
        MACHINE_CLAIM.write_text(f"{self.state_dir}\n")

    def _release_machine(self) -> None:
        if MACHINE_CLAIM.exists() and Path(MACHINE_CLAIM.read_text().strip()) == self.state_dir:
            MACHINE_CLAIM.unlink()

    def _install_systems(self, timeout: float = systems.INSTALL_TIMEOUT_S) -> None:
        systems.install(self.kubeconfig, self.state_dir, timeout=timeout)

    def _uninstall_systems(self) -> None:
        """Stop what `systems.install` started outside the control plane (backend daemon,
        network namespace); the API objects go with etcd."""
        if self.load_state() is None:
            return
        systems.uninstall(self.state_dir)

    def down(self, purge: bool = False) -> list[str]:
        """Stop every component this sandbox started; with `purge`, delete its state directory."""
        stopped = []
        uninstall_error = None
        with self._locked():
            # Control plane first: once the backend routes are gone, a still-running API server
            # would dial pod IPs through the default route, off this machine.
            for name in reversed(COMPONENTS):
                if self.procs.stop(name, timeout=COMPONENT_SPECS[name].stop_grace):
                    stopped.append(name)
            try:
                self._uninstall_systems()
            except Exception as exc:  # noqa: BLE001 - reported once everything else is stopped
                uninstall_error = exc
        self._release_machine()
        if purge and self.state_dir.exists():
            if not self._state_file.exists() and any(p.name != ".lock" for p in self.state_dir.iterdir()):
                # Never delete a directory we cannot recognise as a sandbox.
                raise SandboxError(f"refusing to purge {self.state_dir}: no sandbox.json in it")
            shutil.rmtree(self.state_dir)
        if uninstall_error is not None:
            raise SandboxError(
                f"control plane stopped, but systems uninstall failed: "
                f"{type(uninstall_error).__name__}: {uninstall_error}",
                "systems",
            )
        return stopped

    def status(self) -> SandboxStatus:
        state = self.load_state()
        if state is None:
            return SandboxStatus(state_dir=str(self.state_dir), exists=False)
        comps = []
        for name in COMPONENTS:
            alive = self.procs.alive(name)
            if alive:
                healthy, detail = self._component_health(state, name)
            else:
                healthy, detail = False, "not running"
            comps.append(ComponentStatus(name, alive, self.procs.pid(name), healthy, detail))
        readyz = self._readyz(state) if self.procs.alive("kube-apiserver") else None
        ready = self._nodes_ready(state, state.nodes) if readyz == 200 else None
        return SandboxStatus(
            state_dir=str(self.state_dir),
            exists=True,
            components=comps,
            apiserver_readyz=readyz,
            nodes_ready=ready,
            nodes_expected=state.nodes,
            server=f"https://127.0.0.1:{state.ports.apiserver}",
        )

    # Fault hooks -------------------------------------------------------------------------------
    def stop_component(self, name: str, kill: bool = False) -> bool:
        """Stop one component (e.g. etcd or kube-apiserver for a fault). Returns whether it ran."""
        if name not in COMPONENTS:
            raise SandboxError(f"unknown sandbox component {name!r} (known: {', '.join(COMPONENTS)})")
        with self._locked():
            return self.procs.stop(name, timeout=COMPONENT_SPECS[name].stop_grace, kill=kill)

    def start_component(self, name: str, wait: bool = True) -> bool:
        """Start one stopped component again with the sandbox's saved configuration.

        Returns False if it was already running. With `wait`, returns once it is healthy.
        """
        if name not in COMPONENTS:
            raise SandboxError(f"unknown sandbox component {name!r} (known: {', '.join(COMPONENTS)})")
        with self._locked():
            state = self._require_state()
            if self.procs.alive(name):
                return False
            self._start(name, state, wait=wait)
            if wait and COMPONENT_SPECS[name].restarts_watchers:
                self._restart_watchers(state)
            return True

    def rotate_apiserver_cert(
        self, not_after: dt.datetime | None = None, not_before: dt.datetime | None = None
    ) -> dt.datetime:
        """Reissue the API server's public serving certificate and restart the API server.

        `not_after` in the past gives an expired certificate, a few days ahead one that is about
        to expire; None restores a healthy one-year certificate. Returns the new notAfter.
        The control plane keeps working throughout (it uses the internal SNI certificate).
        """
        state = self._require_state()
        # Stopped first: the API server reloads its serving pair when the files change, and the
        # certificate and key cannot be replaced in one step.
        self.stop_component("kube-apiserver")
        with self._locked():
            self.pki.issue_apiserver_serving(state.advertise_address, not_after=not_after, not_before=not_before)
        self.start_component("kube-apiserver")
        return self.pki.not_after("apiserver")


# Module-level hooks for other modules (faults, demo, tests) -------------------------------------
@dataclass(frozen=True)
class ComponentSpec:
    """Everything the launcher knows about one control-plane component; nothing branches on names."""

    name: str
    argv: Callable[[Sandbox, State], Argv]
    health: Callable[[Sandbox, State], Health]
    """What `status` shows; raises SandboxApiError/MalformedResponse when the endpoint does not answer."""
    ready_what: str
    """What start-up waits for, as named in a timeout message."""
    ready_timeout: float
    ready_when: Callable[[Sandbox, State], Callable[[], bool]] | None = None
    """A predicate for start-up other than `health` being True (made when the start begins)."""
    requires_running: tuple[str, ...] = ()
    """Components whose exit during this one's start-up fails it at once (it always watches itself)."""
    stop_grace: float = DEFAULT_STOP_GRACE
    watcher: bool = False
    """Acts on watches: restarted once the API server serves again after an etcd or API server
    restart. While it starts, its RBAC caches are not yet filled and watches are refused with 403,
    and a controller's informer was once seen never to recover from that (its DaemonSet controller
    then waited forever for its own write). Fresh processes start after /readyz is 200 and list
    everything anew."""
    restarts_watchers: bool = False
    """Its own restart (with wait) is followed by restarting the watchers (see `watcher`)."""
    before_start: Callable[[Sandbox, State], None] | None = None
    scaled_timeout: Callable[[ScaleProfile], float] | None = None
    """A longer start-up wait where the node count's tier asks for one (never shorter than `ready_timeout`)."""


COMPONENT_SPECS: dict[str, ComponentSpec] = {
    spec.name: spec
    for spec in (
        ComponentSpec("etcd", Sandbox._etcd_argv, Sandbox._etcd_health, "etcd /health", 30, restarts_watchers=True),
        # The API server stops listening at once on SIGTERM but then waits for its clients' open watch
        # streams to drain (tens of seconds); it keeps no state of its own, so a short grace loses nothing.
        ComponentSpec(
            "kube-apiserver",
            Sandbox._apiserver_argv,
            Sandbox._apiserver_health,
            "kube-apiserver /readyz 200",
            120,
            requires_running=("etcd",),
            stop_grace=3.0,
            restarts_watchers=True,
        ),
        ComponentSpec(
            "kube-controller-manager",
            Sandbox._controller_manager_argv,
            Sandbox._controller_manager_health,
            "kube-controller-manager /healthz 200",
            60,
            watcher=True,
        ),
        ComponentSpec(
            "kube-scheduler",
            Sandbox._scheduler_argv,
            Sandbox._scheduler_health,
            "kube-scheduler /healthz 200",
            60,
            watcher=True,
        ),
        ComponentSpec(
            "kwok",
            Sandbox._kwok_argv,
            Sandbox._kwok_health,
            "kwok renewing every node Lease",
            90,
            ready_when=Sandbox._kwok_ready_when,
            watcher=True,
            before_start=Sandbox._before_kwok_start,
            scaled_timeout=lambda profile: profile.kwok_ready_timeout_seconds,
        ),
    )
}
"""In start order (etcd first); `down` stops them in reverse."""

COMPONENTS = tuple(COMPONENT_SPECS)
TUNED_COMPONENTS = ("kube-controller-manager", "kube-scheduler", "kwok")
"""The components whose flags depend on the node count (`ScaleProfile`), in start order."""


def up(
    nodes: int = 100, state_dir: Path | str | None = None, timeout: float | None = None, install_systems: bool = True
) -> UpResult:
    return Sandbox(state_dir).up(nodes=nodes, timeout=timeout, install_systems=install_systems)


def down(state_dir: Path | str | None = None, purge: bool = False) -> list[str]:
    return Sandbox(state_dir).down(purge=purge)


def status(state_dir: Path | str | None = None) -> SandboxStatus:
    return Sandbox(state_dir).status()


def stop_component(name: str, state_dir: Path | str | None = None, kill: bool = False) -> bool:
    return Sandbox(state_dir).stop_component(name, kill=kill)


def start_component(name: str, state_dir: Path | str | None = None, wait: bool = True) -> bool:
    return Sandbox(state_dir).start_component(name, wait=wait)


def rotate_apiserver_cert(
    not_after: dt.datetime | None = None, state_dir: Path | str | None = None, not_before: dt.datetime | None = None
) -> dt.datetime:
    return Sandbox(state_dir).rotate_apiserver_cert(not_after=not_after, not_before=not_before)
