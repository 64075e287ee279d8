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
import os
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from outpost.errors import MalformedResponse, OutpostError
from outpost.kube.objects import Node, parse_items
from outpost.kube.paths import object_path
from outpost.kube.timestamps import parse_time
from outpost.tooling import rbac
from outpost_sandbox import systems
from outpost_sandbox.backends.kube import FIELD_MANAGER, Kube, SandboxApiError
from outpost_sandbox.binaries import KUBERNETES_VERSION, ensure_binaries
from outpost_sandbox.components import COMPONENT_SPECS, COMPONENTS, TUNED_COMPONENTS, Health
from outpost_sandbox.kubelet.daemon import NODE_NAME as PROCESS_NODE
from outpost_sandbox.kubelet.images import built_versions
from outpost_sandbox.kwok_stages import STAGES_YAML
from outpost_sandbox.nodes import FAKE_NODE_TAINT, node_manifest, node_name
from outpost_sandbox.pki import PKI
from outpost_sandbox.poll import poll_until
from outpost_sandbox.procs import ProcessTable, tail
from outpost_sandbox.scale import KWOK_LEASE_DURATIONS, MAX_NODES, scale_profile
from outpost_sandbox.state import Log, Ports, SandboxError, State, default_state_dir, port_free, stderr_log

MACHINE_CLAIM = Path(os.environ.get("OUTPOST_SANDBOX_CLAIM", "/run/outpost-sandbox.owner"))
"""Which sandbox owns this machine's backend network (see `Sandbox._claim_machine`)."""


def _own_namespaces(manifests: list[dict[str, Any]]) -> set[str | None]:
    """Namespaces the probe's own manifests create (outpost.tooling.rbac): their grants go in with them, before any
    system; grants in a system's namespace wait for that namespace."""
    return {None, *(obj["metadata"]["name"] for obj in manifests if obj["kind"] == "Namespace")}


def _namespace_of(obj: dict[str, Any]) -> str | None:
    namespace = obj["metadata"].get("namespace")
    return str(namespace) if namespace else None


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

    def __init__(self, state_dir: Path | str | None = None, log: Log = stderr_log) -> None:
        self.state_dir = Path(state_dir).expanduser().resolve() if state_dir else default_state_dir()
        self.log = log
        self.pki = PKI(self.state_dir / "pki")
        self.procs = ProcessTable(self.state_dir / "run", self.state_dir / "logs")
        self.kubeconfig: Final = self.state_dir / "kubeconfig"
        self.probe_kubeconfig: Final = self.state_dir / "probe.kubeconfig"
        # The `kwok-pod-reconciler` job's own write identity (`outpost-reconciler`, outpost.tooling.rbac).
        self.reconciler_kubeconfig: Final = self.state_dir / "reconciler.kubeconfig"
        self.ca_path: Final = self.pki.ca_cert
        self._state_file: Final = self.state_dir / "sandbox.json"

    # State and credentials -----------------------------------------------------------------------
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

    def readyz(self, state: State) -> int | None:
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

    # Lifecycle ---------------------------------------------------------------------------------
    def up(
        self,
        nodes: int = 100,
        timeout: float | None = None,
        install_systems: bool = True,
        install: str = systems.DEFAULT_INSTALL,
    ) -> UpResult:
        """Bring the sandbox up (or confirm it is up) with `nodes` fake nodes Ready, its systems installed as
        `install` says (one of systems.INSTALLS)."""
        if not 0 < nodes <= MAX_NODES:
            raise SandboxError(f"node count {nodes} out of range 1..{MAX_NODES}")
        if install not in systems.INSTALLS:
            raise SandboxError(f"install {install!r} is not one of {', '.join(systems.INSTALLS)}")
        started = time.monotonic()
        with self._locked():
            state = self.load_state()
            if (
                state is not None
                and all(self.procs.alive(c) for c in COMPONENTS)
                and self.readyz(state) == 200
                and self._nodes_ready(state, nodes) >= nodes
                and (not install_systems or (systems.running(self.state_dir) and self._installed_as(install)))
            ):
                # The generated RBAC follows the code, not the day the sandbox came up: re-applied (server-side, so
                # a rule no longer generated leaves its role; the dry-run policy included), and with the systems
                # what it ships for the checks (admission-dry-run's ClusterColocationProfile, a Koordinator kind).
                probe_rbac = rbac.manifests()
                own = _own_namespaces(probe_rbac)
                self._apply(state, [obj for obj in probe_rbac if install_systems or _namespace_of(obj) in own])
                self._apply(state, rbac.reconciler_manifests())
                if install_systems:
                    self._apply(state, rbac.shipped_manifests())
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
                    if not all(port_free(port) for port in state.ports.all()):
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
            # The probe's RBAC is what `outpost rbac --env local` generates from the enabled checks; what it ships
            # for them needs the systems' CRDs, so `systems.install` applies it.
            probe_rbac = rbac.manifests()
            own = _own_namespaces(probe_rbac)
            self._apply(state, [obj for obj in probe_rbac if _namespace_of(obj) in own])
            self._apply(state, rbac.reconciler_manifests())
        if install_systems:
            self._install_systems(scale_profile(state.nodes).install_timeout_seconds, install)
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

    def release_node_leases(self, state: State) -> None:
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

    def node_leases_renewed_since(self, state: State, since: dt.datetime) -> bool:
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

    def _install_systems(self, timeout: float, install: str) -> None:
        systems.install(self.kubeconfig, self.state_dir, timeout=timeout, install_with=install)

    def _installed_as(self, install: str) -> bool:
        """Whether the systems were installed as `install` (else the install below refuses, naming both)."""
        try:
            return systems.installed_with(self.state_dir) == install
        except systems.SystemsError:
            return False

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
        readyz = self.readyz(state) if self.procs.alive("kube-apiserver") else None
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


def up(
    nodes: int = 100,
    state_dir: Path | str | None = None,
    timeout: float | None = None,
    install_systems: bool = True,
    install: str = systems.DEFAULT_INSTALL,
) -> UpResult:
    return Sandbox(state_dir).up(nodes=nodes, timeout=timeout, install_systems=install_systems, install=install)


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
