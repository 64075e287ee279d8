"""Koordinator, OpenKruise and their health backends, installed into the sandbox with upstream names.

`install(kubeconfig, state_dir)` is called by the launcher once the control plane is Ready;
`uninstall(state_dir)` by `outpost sandbox down`. Guarantees:
- Objects carry upstream's names, labels, ports and CRDs (docs/contracts.md "Upstream facts"); Pods, their IPs
  and EndpointSlices come from the real scheduler, controllers and kwok, never from us.
- Webhook configurations trust the sandbox webhook CA (`<state>/systems/pki/ca.crt`) and are
  scoped to opted-in pods outside the system namespaces, so a broken webhook never blocks the
  sandbox's own pods (and failurePolicy is Ignore, as upstream).
- `install` returns only when every Deployment and DaemonSet is fully ready, the backend daemon
  is listening, and the webhook and manager health endpoints answer 200 through the API server's
  proxy; otherwise it raises `SystemsError` naming the object that is not ready. It is idempotent
  (apply is server-side; a running daemon is replaced).
- `uninstall` stops exactly the daemon it started (pid checked against its command line) and
  removes the network namespace; both are idempotent.
- The backend network is one per machine: `install` refuses (naming the other state dir) while
  another sandbox's daemon runs, and `uninstall` never removes the network from under it.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import yaml

from outpost.errors import OutpostError
from outpost.kube.conditions import ESTABLISHED, Condition, is_true
from outpost.kube.objects import DaemonSet, Deployment, Node, Pod, parse, parse_list
from outpost.kube.paths import CRDS, DAEMON_SETS, NODES, PODS, collection_path, object_path
from outpost.kube.paths import DEPLOYMENTS as DEPLOYMENT_KIND
from outpost_sandbox import pki
from outpost_sandbox.backends import netns
from outpost_sandbox.backends.behaviour import default_behaviour, write_behaviour
from outpost_sandbox.backends.kube import Kube, SandboxApiError
from outpost_sandbox.poll import PollTimeout, poll_until

SYSTEMS_DIR = "systems"
WEBHOOK_SERVICES = {  # backend target -> (service, namespace)
    "koord-webhook": ("koordinator-webhook-service", "koordinator-system"),
    "kruise-webhook": ("kruise-webhook-service", "kruise-system"),
}
DEPLOYMENTS = (("koordinator-system", "koord-manager"), ("kruise-system", "kruise-controller-manager"),
               ("default", "ls-web"), ("default", "be-batch"))
DAEMONSETS = (("koordinator-system", "koordlet"), ("kruise-system", "kruise-daemon"))
DEFAULT_REPLICAS = {"koord-manager": 2, "kruise-controller-manager": 2, "ls-web": 2, "be-batch": 2}
DAEMON_MARK = "outpost_sandbox.backends"
INSTALL_TIMEOUT_S = 240.0


class SystemsError(OutpostError):
    """Installing or running the sandbox's extension systems failed."""


def systems_dir(state_dir: Path | str) -> Path:
    return Path(state_dir) / SYSTEMS_DIR


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def template_values(sdir: Path) -> dict[str, str]:
    pdir = sdir / "pki"
    koord = pki.read_pair(pdir, "koordinator-webhook-service")
    kruise = pki.read_pair(pdir, "kruise-webhook-service")
    ca = pki.read_pair(pdir, ca_stem(sdir))
    if koord is None or kruise is None or ca is None:
        raise SystemsError(f"webhook PKI under {pdir} is incomplete; run install again")
    return {"CA_CERT_B64": _b64(ca.cert_pem), "KOORD_CERT_B64": _b64(koord.cert_pem),
            "KRUISE_CERT_B64": _b64(kruise.cert_pem)}


def ca_stem(sdir: Path) -> str:
    """The CA currently published in caBundle: `ca`, or `ca-short` while the expiry fault is on."""
    marker = sdir / "pki" / "active-ca"
    return marker.read_text().strip() if marker.exists() else "ca"


def load_manifests(values: dict[str, str]) -> list[dict[str, Any]]:
    """Every manifest document, in file order, with ${...} placeholders filled (strictly)."""
    docs: list[dict[str, Any]] = []
    folder = resources.files("outpost_sandbox") / "manifests"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        text = Template(entry.read_text()).substitute(values)
        docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


def apply_all(kube: Kube, docs: list[dict[str, Any]], log: Callable[[str], None]) -> None:
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    for crd in crds:
        kube.apply(crd)
    for crd in crds:
        _wait(f"CRD {crd['metadata']['name']} Established", 60,
              partial(_crd_established, kube, crd["metadata"]["name"]))
    for doc in docs:
        if doc["kind"] != "CustomResourceDefinition":
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


def daemonset_ready(kube: Kube, ns: str, name: str) -> bool:
    """Scheduled somewhere, ready everywhere it is scheduled, as of the latest spec."""
    d = parse(DaemonSet, kube.get(object_path(DAEMON_SETS, name, ns)), "daemonset-ready")
    want = d.status.desired_number_scheduled
    return want > 0 and d.status.number_ready == want and d.observed_current


def ensure_pki(sdir: Path) -> None:
    pdir = sdir / "pki"
    for service, namespace in WEBHOOK_SERVICES.values():
        if pki.read_pair(pdir, service) is None:
            pki.issue_service_set(pdir, service, namespace)


# ---- the daemon ---------------------------------------------------------------------------------
def _pid_file(sdir: Path) -> Path:
    return sdir / "backend.pid"


def daemon_pid(state_dir: Path | str) -> int | None:
    """The pid of this sandbox's backend daemon if it is running (checked against /proc cmdline)."""
    sdir = systems_dir(state_dir)
    try:
        pid = int(_pid_file(sdir).read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    args = [a.decode(errors="replace") for a in cmdline]
    if DAEMON_MARK in args and str(sdir.parent.resolve()) in args:
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


def start_daemon(kubeconfig: Path, state_dir: Path, timeout: float = 20.0) -> int:
    sdir = systems_dir(state_dir)
    stop_daemon(state_dir)
    ready = sdir / "backend.ready"
    ready.unlink(missing_ok=True)
    logf = open(sdir / "backend.log", "ab")  # noqa: SIM115 - handed to the child, closed below
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", DAEMON_MARK, "--state-dir", str(state_dir.resolve()),
             "--kubeconfig", str(kubeconfig.resolve())],
            stdout=logf, stderr=logf, stdin=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    finally:
        logf.close()
    _pid_file(sdir).write_text(str(proc.pid))
    def listening() -> bool:
        if proc.poll() is not None:
            raise SystemsError(f"backend daemon exited with {proc.returncode} at start: {_last_line(sdir)}")
        return ready.exists()

    poll_until("the backend daemon to listen", timeout, listening, interval=0.1, fail=lambda _message: SystemsError(
        f"backend daemon not listening after {timeout:.0f} s; see {sdir / 'backend.log'}"))
    return proc.pid


def _last_line(sdir: Path) -> str:
    try:
        lines = (sdir / "backend.log").read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "empty log"


def stop_daemon(state_dir: Path | str, timeout: float = 10.0) -> bool:
    """Stop this sandbox's backend daemon; returns whether one was running."""
    pid = daemon_pid(state_dir)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    try:
        poll_until("the backend daemon to exit", timeout, lambda: daemon_pid(state_dir) is None, interval=0.1)
    except PollTimeout:
        os.kill(pid, signal.SIGKILL)
    # reap if it was our child; otherwise init reaps it
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    _pid_file(systems_dir(state_dir)).unlink(missing_ok=True)
    return True


# ---- install / uninstall ------------------------------------------------------------------------
def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def install(kubeconfig_path: Path | str, state_dir: Path | str,
            log: Callable[[str], None] = _stderr, timeout: float = INSTALL_TIMEOUT_S) -> None:
    """Install both systems and start their backends; returns when all are verifiably ready."""
    kubeconfig, state = Path(kubeconfig_path), Path(state_dir)
    sdir = systems_dir(state)
    sdir.mkdir(parents=True, exist_ok=True)
    others = other_daemons(state)
    if others:
        pid, other = others[0]
        raise SystemsError(f"backend network {netns.NETNS} is in use by the sandbox at {other} (daemon pid {pid}); "
                           "only one sandbox with systems can run per machine: bring that one down first")
    try:
        netns.up()
    except netns.NetnsError as exc:
        raise SystemsError(str(exc)) from None
    ensure_pki(sdir)
    if not (sdir / "behaviour.json").exists():
        write_behaviour(sdir, default_behaviour())
    try:
        with Kube.from_kubeconfig(kubeconfig) as kube:
            apply_all(kube, load_manifests(template_values(sdir)), log)
            start_daemon(kubeconfig, state)
            log(f"systems: backend daemon running (log {sdir / 'backend.log'})")
            wait_ready(kube, timeout)
            set_podgroup_phase(kube, "default", "be-gang", "Running")
    except SandboxApiError as exc:
        raise SystemsError(f"systems install: {exc}") from None
    log("systems: koordinator and openkruise ready")


def wait_ready(kube: Kube, timeout: float = INSTALL_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout

    def left() -> float:
        return max(1.0, deadline - time.monotonic())

    for ns, name in DEPLOYMENTS:
        _wait(f"deployment {ns}/{name} ready", left(), partial(deployment_ready, kube, ns, name))
    for ns, name in DAEMONSETS:
        _wait(f"daemonset {ns}/{name} ready", left(), partial(daemonset_ready, kube, ns, name))
    for path in (
        "/api/v1/namespaces/kruise-system/services/https:kruise-webhook-service:443/proxy/healthz",
        "/api/v1/namespaces/koordinator-system/services/https:koordinator-webhook-service:443/proxy/healthz",
        "/api/v1/namespaces/default/services/ls-web:80/proxy/",
    ):
        _wait(f"200 from {path}", left(), partial(_answers_200, kube, path))
    for ns, label in (("koordinator-system", "koord-app=koord-manager"),
                      ("kruise-system", "control-plane=controller-manager")):
        for pod in kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=label)["items"]:
            path = f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}:8000/proxy/readyz"
            _wait(f"200 from {path}", left(), partial(_answers_200, kube, path))
    _wait("leader leases held", left(), lambda: all(
        kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{n}", ok_missing=True)
        for ns, n in (("koordinator-system", "koordinator-manager"), ("kruise-system", "kruise-manager"))))
    _wait("a NodeMetric for every node", left(), lambda: count(kube, "/apis/slo.koordinator.sh/v1alpha1/nodemetrics")
          >= count(kube, "/api/v1/nodes"))
    _wait("both mutating webhooks mutating a dry-run pod", left(), partial(webhooks_mutate, kube))


def webhooks_mutate(kube: Kube) -> bool:
    """A dry-run pod that opts in to both systems comes back mutated by both webhooks.

    Why: the webhooks fail open (failurePolicy Ignore), so a 200 from their Services through the API server's
    proxy does not prove admission reaches them: the API server's webhook client trusts the configurations'
    caBundle (picked up by an informer, a moment after it changes), and any failed call admits unmutated.
    """
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"generateName": "outpost-sandbox-ready-", "namespace": "default",
                        "labels": {"koordinator.sh/enable-colocation": "true",
                                   "apps.kruise.io/inject-readiness-gate": "true"}},
           "spec": {"containers": [{"name": "c", "image": "library/busybox:1.36"}]}}
    try:
        admitted = kube.create("/api/v1/namespaces/default/pods", pod, dry_run=True)
    except SandboxApiError:
        return False
    labels = (admitted.get("metadata") or {}).get("labels") or {}
    gates = (admitted.get("spec") or {}).get("readinessGates") or []
    return labels.get("koordinator.sh/qosClass") == "BE" and {"conditionType": "KruisePodReady"} in gates


def count(kube: Kube, path: str) -> int:
    """How many objects a collection holds, from a one-item page and the server's remainingItemCount.

    Why: polled twice a second, a full list of 5,000 nodes (about 20 MB) would cost a core of its own;
    without a selector the API server counts the rest of the list exactly.
    """
    page = kube.get(path, limit="1")
    remaining = (page.get("metadata") or {}).get("remainingItemCount")
    return len(page.get("items") or []) + int(remaining or 0)


SYSTEM_NAMESPACES = ("koordinator-system", "kruise-system", "default")


def revive_pods(kube: Kube) -> list[str]:
    """Delete our Running pods left NotReady on Ready nodes; their controllers recreate them.

    Why: when a node goes NotReady, the node lifecycle controller marks its pods NotReady; a real
    kubelet re-reports them Ready when the node returns, but kwok only readies Pending pods. So after
    an outage is healed the pods are replaced, which is what the real controllers then do.
    """
    ready_nodes = {n.name for n in parse_list(Node, kube.get(collection_path(NODES)), "revive-pods") if n.ready}
    revived = []
    for ns in SYSTEM_NAMESPACES:
        for pod in parse_list(Pod, kube.get(collection_path(PODS, ns)), "revive-pods"):
            if (pod.status.phase == "Running" and not pod.ready and not pod.terminating
                    and pod.node_name in ready_nodes and pod.metadata.owner_references):
                kube.delete(object_path(PODS, pod.name, ns), {"gracePeriodSeconds": "0"})
                revived.append(f"{ns}/{pod.name}")
    return revived


def _answers_200(kube: Kube, path: str) -> bool:
    return kube.raw(path).status_code == 200


def set_podgroup_phase(kube: Kube, ns: str, name: str, phase: str,
                       schedule_start: str | None = None) -> None:
    status: dict[str, Any] = {"phase": phase}
    if schedule_start:
        status["scheduleStartTime"] = schedule_start
    kube.apply({"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": ns}, "status": status}, subresource="status")


def uninstall(state_dir: Path | str) -> None:
    """Stop the backend daemon and remove the network namespace (the API objects go with etcd)."""
    stop_daemon(state_dir)
    (systems_dir(state_dir) / "backend.ready").unlink(missing_ok=True)
    if other_daemons(state_dir):
        return  # the network belongs to another running sandbox now; leave it alone
    try:
        netns.down()
    except netns.NetnsError as exc:
        raise SystemsError(str(exc)) from None
