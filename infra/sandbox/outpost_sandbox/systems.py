"""Koordinator and OpenKruise installed into the sandbox as a cluster runs them: the real managers, upstream's objects.

`install` applies upstream's rendered objects (the official Helm charts' by default, or upstream's kustomize
`config/`: `INSTALLS`, rendered by infra/sandbox/go/render_upstream.py), starts the process node (which runs the
real managers) and the backend daemon (what needs a real node), then the sandbox's own objects once the
fail-closed webhooks admit pods (docs/contracts.md "Sandbox"), then what `outpost rbac --env local` ships for the
checks (admission-dry-run's ClusterColocationProfile; the sandbox makes none of its own), as a user applies it
once Koordinator is in. It
returns only when every manager is ready, leading and mutating a dry-run pod, every DaemonSet ready and every
NodeMetric reported, else raises `SystemsError` naming what is not; it is idempotent. `uninstall` stops exactly
what it started. The backend network is machine-wide, so `install` refuses while another sandbox's daemon runs
and `uninstall` never removes it from under one.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import yaml

from outpost.checks.admission_dry_run import MUTATED_BY, NAME, PROBE_LABEL, PROFILE_NAME, PROFILE_QOS
from outpost.errors import OutpostError
from outpost.kube import timestamps
from outpost.kube.conditions import ESTABLISHED, Condition, is_true
from outpost.kube.objects import DaemonSet, Deployment, Node, Pod, parse, parse_list
from outpost.kube.paths import CRDS, DAEMON_SETS, NODES, POD_GROUPS, PODS, collection_path, object_path
from outpost.kube.paths import DEPLOYMENTS as DEPLOYMENT_KIND
from outpost.tooling import rbac
from outpost_sandbox import pki
from outpost_sandbox.backends import netns
from outpost_sandbox.backends.behaviour import default_behaviour, write_behaviour
from outpost_sandbox.backends.kube import Kube, SandboxApiError
from outpost_sandbox.kubelet import daemon as kubelet
from outpost_sandbox.kubelet import host as kubelet_host
from outpost_sandbox.kubelet import podnet
from outpost_sandbox.poll import PollTimeout, poll_until
from outpost_sandbox.procs import ProcessTable

NODEMETRICS = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics"

SYSTEMS_DIR = "systems"
HOLD_SERVICE = ("outpost-sandbox-hold", "outpost-sandbox")
"""The overload fault's seat-holding webhook: served by the backend daemon, a Service of its own."""
MANAGERS = {  # manager Deployment -> (namespace, its pods' label selector, its leader Lease)
    "kruise-controller-manager": ("kruise-system", "control-plane=controller-manager", "kruise-manager"),
    "koord-manager": ("koordinator-system", "koord-app=koord-manager", "koordinator-manager"),
    "koord-scheduler": ("koordinator-system", "koord-app=koord-scheduler", "koord-scheduler"),
    "koord-descheduler": ("koordinator-system", "koord-app=koord-descheduler", "koord-descheduler"),
}
HEALTH_PORT = {"kruise-controller-manager": 8000, "koord-manager": 8000}
"""Managers whose controller-runtime health port serves /readyz (the schedulers' readiness is their probe)."""
WEBHOOK_SERVICES = (("kruise-system", "kruise-webhook-service"), ("koordinator-system", "koordinator-webhook-service"))
WORKLOADS = (("default", "ls-web"), ("default", "be-batch"), ("outpost-sandbox", "outpost-sandbox-hold"))
GANGS = {("default", "be-batch"): "be-gang"}
"""Workload Deployments whose pods form a gang: the PodGroup they belong to."""
GANG_LABEL = "pod-group.scheduling.sigs.k8s.io"
"""The scheduler-plugins label naming a pod's PodGroup, which koord-scheduler's Coscheduling plugin reads
(github.com/koordinator-sh/koordinator@v1.6.0 apis/extension/coscheduling.go)."""
GANG_REQUEUE_S = 10.0
REQUEUE_ANNOTATION = "outpost.sandbox/requeued-at"
DAEMONSETS = (("koordinator-system", "koordlet"), ("kruise-system", "kruise-daemon"))
DAEMON_MARK = "outpost_sandbox.backends"
INSTALLED = "installed"
"""Marker file in the systems directory: the last `install` returned, everything ready."""
INSTALLS = ("helm", "kustomize")
"""How upstream is installed: the official Helm charts with their default values (what people run, so the
default), or upstream's own `config/default` rendered by kustomize (`make deploy`)."""
DEFAULT_INSTALL = "helm"
INSTALL_FILE = "install"
"""File in the systems directory: which of INSTALLS this sandbox was installed with (faults re-apply from it)."""
INSTALL_TIMEOUT_S = 240.0


class SystemsError(OutpostError):
    """Installing or running the sandbox's extension systems failed."""


def systems_dir(state_dir: Path | str) -> Path:
    return Path(state_dir) / SYSTEMS_DIR


def template_values(sdir: Path) -> dict[str, str]:
    """What the sandbox's own manifests fill in: the CA the hold webhook's configuration trusts."""
    ca = pki.read_pair(sdir / "pki", "ca")
    if ca is None:
        raise SystemsError(f"sandbox webhook PKI under {sdir / 'pki'} is incomplete; run install again")
    return {"CA_CERT_B64": base64.b64encode(ca.cert_pem).decode()}


def installed_with(state_dir: Path | str) -> str:
    """Which of INSTALLS this sandbox's systems were installed with."""
    path = systems_dir(state_dir) / INSTALL_FILE
    try:
        install = path.read_text().strip()
    except FileNotFoundError:
        raise SystemsError(f"no systems installed in the sandbox at {state_dir} ({path} is missing)") from None
    if install not in INSTALLS:
        raise SystemsError(f"{path} names install {install!r}, not one of {', '.join(INSTALLS)}")
    return install


def upstream_manifests(install: str) -> list[dict[str, Any]]:
    """Upstream's own objects as `install` gives them, verbatim as rendered (never templated: CRD descriptions
    hold `$`)."""
    if install not in INSTALLS:
        raise SystemsError(f"unknown install {install!r}: one of {', '.join(INSTALLS)}")
    folder = resources.files("outpost_sandbox") / "manifests" / "upstream" / install
    docs: list[dict[str, Any]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            docs += [d for d in yaml.safe_load_all(entry.read_text()) if d]
    return docs


def sandbox_manifests(values: dict[str, str]) -> list[dict[str, Any]]:
    """The sandbox's own objects (manifests/*.yaml), in file order, with ${...} placeholders filled (strictly)."""
    docs: list[dict[str, Any]] = []
    folder = resources.files("outpost_sandbox") / "manifests"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        text = Template(entry.read_text()).substitute(values)
        docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


def load_manifests(install: str, values: dict[str, str]) -> list[dict[str, Any]]:
    """Every object the sandbox installs: upstream's, then its own."""
    return upstream_manifests(install) + sandbox_manifests(values)


def apply_all(kube: Kube, docs: list[dict[str, Any]], log: Callable[[str], None]) -> None:
    """CRDs first (and Established), then namespaces, then the rest in order: server-side, so re-running converges."""
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    for crd in crds:
        kube.apply(crd)
    for crd in crds:
        _wait(
            f"CRD {crd['metadata']['name']} Established", 60, partial(_crd_established, kube, crd["metadata"]["name"])
        )
    rest = [d for d in docs if d["kind"] != "CustomResourceDefinition"]
    for doc in sorted(rest, key=lambda d: d["kind"] != "Namespace"):
        kube.apply(doc)
    log(f"systems: applied {len(docs)} objects")


def _crd_established(kube: Kube, name: str) -> bool:
    crd = kube.get(object_path(CRDS, name))
    conditions = [Condition.model_validate(c) for c in (crd.get("status") or {}).get("conditions") or []]
    return is_true(conditions, ESTABLISHED)


def _wait(what: str, timeout: float, predicate: Callable[[], bool]) -> None:
    poll_until(what, timeout, predicate, retry_on=(SandboxApiError,), fail=SystemsError)


def deployment_ready(kube: Kube, ns: str, name: str) -> bool:
    """Every wanted replica ready and updated, as of the latest spec."""
    d = parse(Deployment, kube.get(object_path(DEPLOYMENT_KIND, name, ns)), "deployment-ready")
    want = d.spec.replicas
    return d.status.ready_replicas == want and d.status.updated_replicas == want and d.observed_current


def requeue_gang(kube: Kube, ns: str, podgroup: str) -> None:
    """Have koord-scheduler reconsider a gang's held-back members, by an update of their PodGroup.

    koord-scheduler v1.6.0 checks a new pod against its gang (Coscheduling PreEnqueue: "gang child pod not collect
    enough") from the scheduling queue's pod handler, and counts the pod into the gang from the gang cache's, two
    informer handlers in no fixed order: the member that completes a gang can be held back as if it did not, with
    its siblings. Held pods come back on a PodGroup Add or Update (the events Coscheduling registers), else on the
    queue's 5-minute flush (github.com/koordinator-sh/koordinator@v1.6.0
    pkg/scheduler/plugins/coscheduling/coscheduling.go EventsToRegister, PreEnqueue; core/gang_cache.go
    onPodAddInternal). The PodGroup controller's own status write usually frees them; when it came first, this
    annotation does what an operator's `kubectl annotate` would."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kube.merge_patch(object_path(POD_GROUPS, podgroup, ns), {"metadata": {"annotations": {REQUEUE_ANNOTATION: now}}})


def requeuing(kube: Kube, ns: str, podgroup: str, predicate: Callable[[], bool]) -> Callable[[], bool]:
    """`predicate`, which while false and some member of the gang is unscheduled requeues the gang every
    GANG_REQUEUE_S seconds (see `requeue_gang`)."""
    last = time.monotonic()

    def check() -> bool:
        nonlocal last
        if predicate():
            return True
        if time.monotonic() - last >= GANG_REQUEUE_S:
            last = time.monotonic()
            members = kube.get(collection_path(PODS, ns), labelSelector=f"{GANG_LABEL}={podgroup}")["items"]
            if any(not (p.get("spec") or {}).get("nodeName") for p in members):
                requeue_gang(kube, ns, podgroup)
        return False

    return check


def pods_summary(kube: Kube, ns: str, selector: str) -> str:
    """One line on the pods a selector matches, for a timeout message: each pod's phase, node and, while
    unscheduled, the scheduler's reason."""
    parts = []
    for pod in kube.get(collection_path(PODS, ns), labelSelector=selector)["items"]:
        status = pod.get("status") or {}
        scheduled: dict[str, Any] = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {}
        )
        node = (pod.get("spec") or {}).get("nodeName") or "unscheduled"
        why = ""
        if scheduled.get("status") == "False":
            why = f" ({scheduled.get('reason')}: {scheduled.get('message')})"
        parts.append(f"{pod['metadata']['name']} {status.get('phase', '?')} on {node}{why}")
    return "; ".join(parts) or "no pods"


def wait_workload(kube: Kube, ns: str, name: str, timeout: float) -> None:
    """A workload Deployment ready (its gang requeued when held back); a timeout names its pods' state."""
    predicate: Callable[[], bool] = partial(deployment_ready, kube, ns, name)
    if (ns, name) in GANGS:
        predicate = requeuing(kube, ns, GANGS[ns, name], predicate)
    try:
        _wait(f"deployment {ns}/{name} ready", timeout, predicate)
    except SystemsError as exc:
        try:
            d = kube.get(object_path(DEPLOYMENT_KIND, name, ns))
            labels = ((d.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            pods = pods_summary(kube, ns, ",".join(f"{k}={v}" for k, v in labels.items()))
        except SandboxApiError:
            raise exc from None
        raise SystemsError(f"{exc}: pods {pods}") from None


def daemonset_ready(kube: Kube, ns: str, name: str) -> bool:
    """Scheduled somewhere, ready everywhere it is scheduled, as of the latest spec."""
    d = parse(DaemonSet, kube.get(object_path(DAEMON_SETS, name, ns)), "daemonset-ready")
    want = d.status.desired_number_scheduled
    return want > 0 and d.status.number_ready == want and d.observed_current


def upstream_replicas(state_dir: Path | str, name: str) -> int:
    """A manager or workload Deployment's replica count as installed (what a scale-to-zero heal restores)."""
    for doc in load_manifests(installed_with(state_dir), {"CA_CERT_B64": ""}):
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == name:
            return int(doc["spec"].get("replicas", 1))
    raise SystemsError(f"no Deployment {name} among the sandbox's manifests")


# ---- the daemons --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Daemon:
    """A long-running helper process of the sandbox (not a control-plane component)."""

    module: str
    name: str

    def pid_file(self, state_dir: Path) -> Path:
        return Path(state_dir) / f"{self.name}.pid"

    def log_file(self, state_dir: Path) -> Path:
        return Path(state_dir) / "logs" / f"{self.name}.log"


BACKEND = Daemon(DAEMON_MARK, "backend")
KUBELET = Daemon("outpost_sandbox.kubelet", "kubelet")


def daemon_pid(state_dir: Path | str, daemon: Daemon = BACKEND) -> int | None:
    """The pid of this sandbox's `daemon` if it is running (checked against /proc cmdline)."""
    try:
        pid = int(daemon.pid_file(Path(state_dir)).read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    args = [a.decode(errors="replace") for a in cmdline]
    if daemon.module in args and str(Path(state_dir).resolve()) in args:
        return pid
    return None


def other_daemons(state_dir: Path | str) -> list[tuple[int, str]]:
    """Backend daemons of *other* sandboxes on this machine: (pid, their state dir).

    Why: the backend network (namespace, ports) is one per machine; a second sandbox must be
    refused with a clear message, and tearing the network down under a running one must not happen.
    """
    own = str(Path(state_dir).resolve())
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = [a.decode(errors="replace") for a in (proc / "cmdline").read_bytes().split(b"\0")]
        except OSError:
            continue
        if DAEMON_MARK in args and "--state-dir" in args:
            other = args[args.index("--state-dir") + 1] if args.index("--state-dir") + 1 < len(args) else ""
            if other != own:
                found.append((int(proc.name), other))
    return found


def start_daemon(daemon: Daemon, state_dir: Path, args: Iterable[str], ready: Path, timeout: float = 30.0) -> int:
    stop_daemon(state_dir, daemon)
    ready.unlink(missing_ok=True)
    log_file = daemon.log_file(state_dir)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    logf = open(log_file, "ab")  # noqa: SIM115 - handed to the child, closed below
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", daemon.module, "--state-dir", str(state_dir.resolve()), *args],
            stdout=logf,
            stderr=logf,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        logf.close()
    daemon.pid_file(state_dir).write_text(str(proc.pid))

    def started() -> bool:
        if proc.poll() is not None:
            raise SystemsError(f"{daemon.name} daemon exited with {proc.returncode} at start: {_last_line(log_file)}")
        return ready.exists()

    poll_until(
        f"the {daemon.name} daemon to start",
        timeout,
        started,
        interval=0.1,
        fail=lambda _message: SystemsError(f"{daemon.name} daemon not started after {timeout:.0f} s; see {log_file}"),
    )
    return proc.pid


def _last_line(log_file: Path) -> str:
    try:
        lines = log_file.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "empty log"


def stop_daemon(state_dir: Path | str, daemon: Daemon = BACKEND, timeout: float = 10.0) -> bool:
    """Stop this sandbox's `daemon`; returns whether one was running."""
    pid = daemon_pid(state_dir, daemon)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    try:
        poll_until(
            f"the {daemon.name} daemon to exit", timeout, lambda: daemon_pid(state_dir, daemon) is None, interval=0.1
        )
    except PollTimeout:
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):  # reap if it was our child; otherwise init reaps it
        os.waitpid(pid, os.WNOHANG)
    daemon.pid_file(Path(state_dir)).unlink(missing_ok=True)
    return True


def running(state_dir: Path | str) -> bool:
    """Whether this sandbox's systems were installed to the end and their daemons (the backend daemon, the
    process node's kubelet) are alive."""
    return (
        (systems_dir(state_dir) / INSTALLED).exists()
        and daemon_pid(state_dir, BACKEND) is not None
        and daemon_pid(state_dir, KUBELET) is not None
    )


def start_backend(kubeconfig: Path, state_dir: Path) -> int:
    return start_daemon(
        BACKEND,
        state_dir,
        ["--kubeconfig", str(kubeconfig.resolve())],
        systems_dir(state_dir) / "backend.ready",
        timeout=20.0,
    )


def start_kubelet(state_dir: Path) -> int:
    """The process node's kubelet, as admin on the API server's internal endpoint (immune to certificate faults)."""
    args = [
        "--kubeconfig",
        str(state_dir / "kubeconfigs" / "admin-internal.kubeconfig"),
        "--bin-dir",
        str((state_dir / "bin").resolve()),
        "--ca-file",
        str(state_dir / "pki" / "ca.crt"),
    ]
    return start_daemon(KUBELET, state_dir, args, state_dir / "kubelet" / "kubelet.ready")


def stop_process_node(state_dir: Path, networks: bool = True) -> list[str]:
    """Stop every container process this sandbox's process node started, then its containerd, and (with
    `networks`: the pod networks, the node's network and the kubepods cgroups are machine-wide, as the backend
    network is) remove them; returns what ran."""
    stopped = []
    for table_dir, log_dir in (("run", "pods"), ("node-run", "node")):  # the pods first, then what served them
        table = ProcessTable(state_dir / "kubelet" / table_dir, state_dir / "logs" / log_dir)
        for record in sorted((state_dir / "kubelet" / table_dir).glob("*.json")):
            if table.stop(record.stem, timeout=5.0):
                stopped.append(record.stem)
            record.unlink(missing_ok=True)
    if networks:
        for ns in podnet.existing():
            ip = str(podnet.POD_RANGE.network_address + int(ns.removeprefix(podnet.NETNS_PREFIX)))
            podnet.delete(ip)
        podnet.delete_node()
        left = kubelet_host.remove_kubepods()
        if left:
            _stderr(f"kubepods cgroups still in use, left in place: {', '.join(left)}")
    return stopped


# ---- install / uninstall ------------------------------------------------------------------------
def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def install(
    kubeconfig_path: Path | str,
    state_dir: Path | str,
    log: Callable[[str], None] = _stderr,
    timeout: float = INSTALL_TIMEOUT_S,
    install_with: str | None = None,
) -> None:
    """Install both systems as `install_with` does (by default: as this sandbox was installed before, else
    DEFAULT_INSTALL), their managers and the backends; returns when all are verifiably ready. A sandbox installed
    one way is not switched to the other in place (objects of one would linger)."""
    kubeconfig, state = Path(kubeconfig_path), Path(state_dir)
    sdir = systems_dir(state)
    sdir.mkdir(parents=True, exist_ok=True)
    before = installed_with(state) if (sdir / INSTALL_FILE).exists() else None
    install_with = install_with or before or DEFAULT_INSTALL
    manifests = upstream_manifests(install_with)
    if before is not None and before != install_with:
        raise SystemsError(
            f"the sandbox at {state} was installed with {before}, not {install_with}: "
            f"`outpost sandbox down --purge` it first"
        )
    (sdir / INSTALL_FILE).write_text(install_with)
    (sdir / INSTALLED).unlink(missing_ok=True)
    others = other_daemons(state)
    if others:
        pid, other = others[0]
        raise SystemsError(
            f"backend network {netns.NETNS} is in use by the sandbox at {other} (daemon pid {pid}); "
            "only one sandbox with systems can run per machine: bring that one down first"
        )
    try:
        netns.up()
    except netns.NetnsError as exc:
        raise SystemsError(str(exc)) from None
    pdir = sdir / "pki"
    if pki.read_pair(pdir, HOLD_SERVICE[0]) is None:
        pki.issue_service_set(pdir, *HOLD_SERVICE)
    if not (sdir / "behaviour.json").exists():
        write_behaviour(sdir, default_behaviour())
    deadline = time.monotonic() + timeout

    def left() -> float:
        return max(1.0, deadline - time.monotonic())

    try:
        with Kube.from_kubeconfig(kubeconfig) as kube:
            apply_all(kube, manifests, log)
            start_backend(kubeconfig, state)
            start_kubelet(state)
            log(f"systems: backend daemon and process node running (logs in {state / 'logs'})")
            wait_managers(kube, left(), mutating=False)
            apply_all(kube, sandbox_manifests(template_values(sdir)), log)
            apply_all(kube, rbac.shipped_manifests(), log)
            wait_ready(kube, left())
    except SandboxApiError as exc:
        raise SystemsError(f"systems install: {exc}") from None
    (sdir / INSTALLED).write_text("")
    log(f"systems: koordinator and openkruise ready (real managers, installed with {install_with})")


def wait_managers(kube: Kube, timeout: float = INSTALL_TIMEOUT_S, mutating: bool = True) -> None:
    """Every manager Deployment ready, answering, leading, and (with `mutating`) both pod webhooks mutating."""
    deadline = time.monotonic() + timeout

    def left() -> float:
        return max(1.0, deadline - time.monotonic())

    for name, (ns, _selector, _lease) in MANAGERS.items():
        _wait(f"deployment {ns}/{name} ready", left(), partial(deployment_ready, kube, ns, name))
    for name, port in HEALTH_PORT.items():
        ns, selector, _lease = MANAGERS[name]
        for pod in kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector)["items"]:
            path = f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}:{port}/proxy/readyz"
            _wait(f"200 from {path}", left(), partial(_answers_200, kube, path))
    for ns, service in WEBHOOK_SERVICES:
        path = f"/api/v1/namespaces/{ns}/services/https:{service}:443/proxy/healthz"
        _wait(f"200 from {path}", left(), partial(_answers_200, kube, path))
    _wait("every leader Lease held by a running pod of its manager", left(), partial(leases_settled, kube))
    _wait("a NodeMetric for every node", left(), lambda: count(kube, NODEMETRICS) >= count(kube, "/api/v1/nodes"))
    if mutating:
        _wait("both real mutating webhooks mutating a dry-run pod", left(), partial(webhooks_mutate, kube))


def wait_ready(kube: Kube, timeout: float = INSTALL_TIMEOUT_S) -> None:
    """Everything `install` promises (see the module docstring)."""
    deadline = time.monotonic() + timeout

    def left() -> float:
        return max(1.0, deadline - time.monotonic())

    wait_managers(kube, left())
    for ns, name in WORKLOADS:
        wait_workload(kube, ns, name, left())
    for ns, name in DAEMONSETS:
        _wait(f"daemonset {ns}/{name} ready", left(), partial(daemonset_ready, kube, ns, name))
    path = "/api/v1/namespaces/default/services/ls-web:80/proxy/"
    _wait(f"200 from {path}", left(), partial(_answers_200, kube, path))
    poll_until(
        "koordlet's report (status.updateTime) in every node's NodeMetric",
        left(),
        partial(nodemetrics_reported, kube),
        interval=2.0,
        retry_on=(SandboxApiError,),
        fail=SystemsError,
    )
    poll_until(
        f"a report of the running koordlet in {kubelet.NODE_NAME}'s NodeMetric",
        left(),
        partial(process_node_reported, kube),
        interval=2.0,
        retry_on=(SandboxApiError,),
        fail=SystemsError,
    )


def nodemetrics_reported(kube: Kube) -> bool:
    """Every NodeMetric has been reported at least once (by the process node's real koordlet, one report interval
    after it starts, and the backend daemon's stand-in for the KWOK nodes); a stale one (the
    nodemetric-stale fault's) still counts, so this also holds while that fault is on."""
    return all((metric.get("status") or {}).get("updateTime") for metric in kube.list(NODEMETRICS))


def process_node_pod(kube: Kube, namespace: str, selector: str) -> dict[str, Any] | None:
    """The pod of `namespace` matching `selector` on the process node (a DaemonSet's), or None."""
    pods = kube.get(
        collection_path(PODS, namespace), labelSelector=selector, fieldSelector=f"spec.nodeName={kubelet.NODE_NAME}"
    )["items"]
    return pods[0] if pods else None


def process_node_reported(kube: Kube) -> bool:
    """The process node's real koordlet has reported since it started: a sandbox started again over its kept
    state holds the report of the koordlet that ran before, which the new one replaces only one report interval
    after it starts (60 s)."""
    pod = process_node_pod(kube, "koordinator-system", "koord-app=koordlet")
    if pod is None:
        return False
    running = ((pod.get("status") or {}).get("containerStatuses") or [{}])[0].get("state", {}).get("running")
    metric = kube.get(f"{NODEMETRICS}/{kubelet.NODE_NAME}", ok_missing=True) or {}
    reported = (metric.get("status") or {}).get("updateTime")
    if not running or not reported:
        return False
    started, last = timestamps.parse_time(running.get("startedAt")), timestamps.parse_time(reported)
    return started is not None and last is not None and last >= started.replace(microsecond=0)


def leases_settled(kube: Kube) -> bool:
    """Each manager's leader Lease is held by one of its Running pods (holder `<pod name>_<uuid>`) and renewed
    within its duration: a process restarted in the same pod must have taken it over, not merely share the name."""
    for ns, selector, lease in MANAGERS.values():
        found = kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{lease}", ok_missing=True)
        spec = (found or {}).get("spec") or {}
        holder = str(spec.get("holderIdentity") or "").rpartition("_")[0]
        pods = kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector)["items"]
        running = {
            p["metadata"]["name"]
            for p in pods
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        }
        renewed = timestamps.age_seconds(spec.get("renewTime"), dt.datetime.now(dt.UTC))
        if holder not in running or renewed is None or renewed > float(spec.get("leaseDurationSeconds") or 0):
            return False
    return True


DRY_RUN_OWNER = {
    "apiVersion": "apps.kruise.io/v1alpha1",
    "kind": "CloneSet",
    "name": "outpost-sandbox-ready",
    "uid": "00000000-0000-4000-8000-00000000c10e",
    "controller": True,
}
"""A CloneSet controls the dry-run pod: kruise's webhook injects its readiness gate only into pods of kruise
workloads (github.com/openkruise/kruise@v1.8.0 pkg/webhook/pod/mutating/pod_readiness.go); none is stored."""


def webhooks_mutate(kube: Kube, namespace: str = rbac.PROBE_NAMESPACE) -> bool:
    """A dry-run pod that both real webhooks act on comes back mutated by both.

    Why: a 200 from the webhook Services through the API server's proxy does not prove admission reaches them:
    the API server's webhook client trusts the configurations' caBundle (picked up by an informer, a moment after
    the manager writes it), and calls the endpoints the EndpointSlices list. Koordinator mutates the pod because
    Outpost's own ClusterColocationProfile (`outpost rbac`) selects it: it is in the probe's namespace and carries
    the probe label, as admission-dry-run's pod does; no other pod is selected.
    """
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "outpost-sandbox-ready-",
            "namespace": namespace,
            "labels": {PROBE_LABEL: NAME},
            "ownerReferences": [DRY_RUN_OWNER],
        },
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "library/busybox:1.36",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ]
        },
    }
    try:
        admitted = kube.create(f"/api/v1/namespaces/{namespace}/pods", pod, dry_run=True)
    except SandboxApiError:
        return False
    labels = (admitted.get("metadata") or {}).get("labels") or {}
    gates = (admitted.get("spec") or {}).get("readinessGates") or []
    mutated = labels.get("koordinator.sh/qosClass") == PROFILE_QOS and labels.get(MUTATED_BY) == PROFILE_NAME
    return mutated and {"conditionType": "KruisePodReady"} in gates


def count(kube: Kube, path: str) -> int:
    """How many objects a collection holds, from a one-item page and the server's remainingItemCount.

    Why: polled twice a second, a full list of 5,000 nodes (about 20 MB) would cost a core of its own;
    without a selector the API server counts the rest of the list exactly.
    """
    page = kube.get(path, limit="1")
    remaining = (page.get("metadata") or {}).get("remainingItemCount")
    return len(page.get("items") or []) + int(remaining or 0)


SYSTEM_NAMESPACES = ("koordinator-system", "kruise-system", "default", "outpost-sandbox")


def revive_pods(kube: Kube) -> list[str]:
    """Delete our Running pods left NotReady on Ready KWOK nodes; their controllers recreate them.

    Why: when a node goes NotReady, the node lifecycle controller marks its pods NotReady; a real
    kubelet re-reports them Ready when the node returns, but kwok only readies Pending pods. So after
    an outage is healed the pods are replaced, which is what the real controllers then do. The process
    node's pods are left to its kubelet, which reports their readiness itself.
    """
    ready_nodes = {
        n.name
        for n in parse_list(Node, kube.get(collection_path(NODES)), "revive-pods")
        if n.ready and n.name != kubelet.NODE_NAME
    }
    revived = []
    for ns in SYSTEM_NAMESPACES:
        for pod in parse_list(Pod, kube.get(collection_path(PODS, ns)), "revive-pods"):
            if (
                pod.status.phase == "Running"
                and not pod.ready
                and not pod.terminating
                and pod.node_name in ready_nodes
                and pod.metadata.owner_references
            ):
                kube.delete(object_path(PODS, pod.name, ns), {"gracePeriodSeconds": "0"})
                revived.append(f"{ns}/{pod.name}")
    return revived


def _answers_200(kube: Kube, path: str) -> bool:
    return kube.raw(path).status_code == 200


def uninstall(state_dir: Path | str) -> None:
    """Stop the daemons and the managers, remove the pod networks and the backend network (the API objects go
    with etcd)."""
    state = Path(state_dir)
    (systems_dir(state) / INSTALLED).unlink(missing_ok=True)
    stop_daemon(state, KUBELET)
    others = bool(other_daemons(state))
    stop_process_node(state, networks=not others)
    stop_daemon(state)
    (systems_dir(state) / "backend.ready").unlink(missing_ok=True)
    if others:
        return  # the networks belong to another running sandbox now; leave them alone
    try:
        netns.down()
    except netns.NetnsError as exc:
        raise SystemsError(str(exc)) from None


def process_node_faults(state_dir: Path | str) -> dict[str, Any]:
    """What the process node's kubelet is told to do to its pods (see `outpost_sandbox.kubelet.daemon`)."""
    path = Path(state_dir) / "kubelet" / kubelet.FAULTS_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return data if isinstance(data, dict) else {}


def write_process_node_faults(state_dir: Path | str, data: dict[str, Any]) -> None:
    path = Path(state_dir) / "kubelet" / kubelet.FAULTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)
