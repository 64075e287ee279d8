"""The control-plane components as data: each one's command line, health, readiness and stop grace
(`COMPONENT_SPECS`, in start order).

Nothing in the launcher branches on a component's name: `cluster.Sandbox` starts, waits for, restarts and
stops whatever this table lists, in its order (reversed for `down`).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from outpost_sandbox.backends.kube import Kube, SandboxApiError
from outpost_sandbox.nodes import FAKE_NODE_ANNOTATION, POD_CIDR, SERVICE_CIDR
from outpost_sandbox.scale import ScaleProfile, scale_profile
from outpost_sandbox.state import State

if TYPE_CHECKING:
    from outpost_sandbox.cluster import Sandbox


# Seconds between SIGTERM and SIGKILL unless a component's spec says otherwise: etcd gets the full
# grace to close its database cleanly.
DEFAULT_STOP_GRACE = 20.0

Argv = tuple[list[str], dict[str, str] | None]
"""A component's command line and its environment (None: inherit the launcher's)."""
Health = tuple[bool | None, str]
"""Healthy (None: the component has no health endpoint worth asking) and what was observed."""


def etcd_argv(sandbox: Sandbox, state: State) -> Argv:
    b, p, sd = Path(state.bin_dir), state.ports, sandbox.state_dir
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


def apiserver_argv(sandbox: Sandbox, state: State) -> Argv:
    b, p, pki, sd = Path(state.bin_dir), state.ports, sandbox.pki, sandbox.state_dir
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


def serving_flags(sandbox: Sandbox, kubeconfig: Path, port: int) -> list[str]:
    """Client and serving flags shared by the controller manager and the scheduler."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={sandbox.pki.cert('components')}",
        f"--tls-private-key-file={sandbox.pki.key('components')}",
    ]


def controller_manager_argv(sandbox: Sandbox, state: State) -> Argv:
    b, p, pki, kc = Path(state.bin_dir), state.ports, sandbox.pki, sandbox.state_dir / "kubeconfigs"
    return [
        str(b / "kube-controller-manager"),
        *serving_flags(sandbox, kc / "kube-controller-manager.kubeconfig", p.controller_manager),
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


def scheduler_argv(sandbox: Sandbox, state: State) -> Argv:
    b, p, kc = Path(state.bin_dir), state.ports, sandbox.state_dir / "kubeconfigs"
    return [
        str(b / "kube-scheduler"),
        *serving_flags(sandbox, kc / "kube-scheduler.kubeconfig", p.scheduler),
        "--leader-elect=false",
        *scale_profile(state.nodes).scheduler_flags(),
    ], None


def kwok_argv(sandbox: Sandbox, state: State) -> Argv:
    b, sd, kc = Path(state.bin_dir), sandbox.state_dir, sandbox.state_dir / "kubeconfigs"
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
        # which costs more CPU than the simulation itsandbox.
        "-v=WARN",
    ], env


def etcd_health(sandbox: Sandbox, state: State) -> Health:
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


def apiserver_health(sandbox: Sandbox, state: State) -> Health:
    code = sandbox.readyz(state)
    return code == 200, f"/readyz {code if code is not None else 'unreachable'}"


def controller_manager_health(sandbox: Sandbox, state: State) -> Health:
    return healthz(sandbox, state.ports.controller_manager)


def scheduler_health(sandbox: Sandbox, state: State) -> Health:
    return healthz(sandbox, state.ports.scheduler)


def healthz(sandbox: Sandbox, port: int) -> Health:
    """/healthz of a component serving with the sandbox's `components` certificate."""
    with Kube.for_server(f"https://127.0.0.1:{port}", sandbox.pki.ca_cert, timeout=5) as component:
        r = component.raw("/healthz", timeout=5)
    return r.status_code == 200, f"/healthz {r.status_code}"


def kwok_health(sandbox: Sandbox, _state: State) -> Health:
    return None, "process only (kwok's /healthz proves nothing)"


def before_kwok_start(sandbox: Sandbox, state: State) -> None:
    if sandbox.procs.alive("kube-apiserver"):
        sandbox.release_node_leases(state)


def kwok_ready_when(sandbox: Sandbox, state: State) -> Callable[[], bool]:
    """kwok has no health endpoint: it is working once it has renewed every node Lease it holds
    since it started (none exist yet on a first start)."""
    started = dt.datetime.now(dt.UTC)
    return lambda: sandbox.node_leases_renewed_since(state, started)


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
        ComponentSpec("etcd", etcd_argv, etcd_health, "etcd /health", 30, restarts_watchers=True),
        # The API server stops listening at once on SIGTERM but then waits for its clients' open watch
        # streams to drain (tens of seconds); it keeps no state of its own, so a short grace loses nothing.
        ComponentSpec(
            "kube-apiserver",
            apiserver_argv,
            apiserver_health,
            "kube-apiserver /readyz 200",
            120,
            requires_running=("etcd",),
            stop_grace=3.0,
            restarts_watchers=True,
        ),
        ComponentSpec(
            "kube-controller-manager",
            controller_manager_argv,
            controller_manager_health,
            "kube-controller-manager /healthz 200",
            60,
            watcher=True,
        ),
        ComponentSpec(
            "kube-scheduler",
            scheduler_argv,
            scheduler_health,
            "kube-scheduler /healthz 200",
            60,
            watcher=True,
        ),
        ComponentSpec(
            "kwok",
            kwok_argv,
            kwok_health,
            "kwok renewing every node Lease",
            90,
            ready_when=kwok_ready_when,
            watcher=True,
            before_start=before_kwok_start,
            scaled_timeout=lambda profile: profile.kwok_ready_timeout_seconds,
        ),
    )
}
"""In start order (etcd first); `down` stops them in reverse."""

COMPONENTS = tuple(COMPONENT_SPECS)
TUNED_COMPONENTS = ("kube-controller-manager", "kube-scheduler", "kwok")
"""The components whose flags depend on the node count (`ScaleProfile`), in start order."""
