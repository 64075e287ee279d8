"""Session fixture for e2e tests: one real sandbox shared by every test, torn down at the end of the session.

It never skips: a sandbox that cannot start fails with the cause and its log's tail, so a broken environment is
red, not missing coverage. Environment:
  OUTPOST_SANDBOX_NODES     fake nodes to create (default 20, to keep the session fast)
  OUTPOST_SANDBOX_SYSTEMS   "0" to start only the control plane (no Koordinator/OpenKruise installs)
  OUTPOST_SANDBOX_INSTALL   how they are installed: "helm" (default, the official charts) or "kustomize"
  OUTPOST_E2E_SANDBOX_DIR   reuse (or create) a sandbox in this directory and leave it running
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from check_runs import CheckRuns

from outpost_sandbox import faults
from outpost_sandbox import systems as sandbox_systems
from outpost_sandbox.backends.kube import Kube
from outpost_sandbox.cluster import Sandbox
from outpost_sandbox.components import COMPONENTS
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver
from outpost_sandbox.state import SandboxError


@dataclass(frozen=True)
class SandboxInfo:
    """What a test needs to reach the sandbox, as the probe or as admin."""

    handle: Sandbox
    state_dir: Path
    kubeconfig: Path  # admin (system:masters)
    probe_kubeconfig: Path  # outpost-probe, read-only
    server: str  # https://127.0.0.1:PORT, public serving certificate
    ca_path: Path
    probe_token: str
    admin_token: str
    bin_dir: Path
    nodes: int
    systems: bool  # Koordinator and OpenKruise installed
    install: str  # how: "helm" or "kustomize" (outpost_sandbox.systems.INSTALLS)

    def kubectl(
        self, *args: str, probe: bool = False, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        config = self.probe_kubeconfig if probe else self.kubeconfig
        proc = subprocess.run(
            [str(self.bin_dir / "kubectl"), "--kubeconfig", str(config), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}", pytrace=False)
        return proc


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every e2e test is a `sandbox` test: marked here once rather than in each file."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(pytest.mark.sandbox)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    nodes = int(os.environ.get("OUTPOST_SANDBOX_NODES", "20"))
    systems = os.environ.get("OUTPOST_SANDBOX_SYSTEMS", "1") != "0"
    install = os.environ.get("OUTPOST_SANDBOX_INSTALL", sandbox_systems.DEFAULT_INSTALL)
    reuse_dir = os.environ.get("OUTPOST_E2E_SANDBOX_DIR")
    state_dir = Path(reuse_dir) if reuse_dir else tmp_path_factory.mktemp("sandbox")
    handle = Sandbox(state_dir)
    try:
        result = handle.up(nodes=nodes, install_systems=systems, install=install)
    except SandboxError as exc:
        if not reuse_dir:
            handle.down()
        pytest.fail(f"sandbox could not start: {exc.detail()}", pytrace=False)
    except Exception as exc:
        if not reuse_dir:
            handle.down()
        pytest.fail(f"sandbox could not start: {type(exc).__name__}: {exc}")
    info = SandboxInfo(
        handle=handle,
        state_dir=result.state_dir,
        kubeconfig=result.kubeconfig,
        probe_kubeconfig=result.probe_kubeconfig,
        server=result.server,
        ca_path=result.ca_path,
        probe_token=handle.probe_token(),
        admin_token=handle.admin_token(),
        bin_dir=result.bin_dir,
        nodes=nodes,
        systems=systems,
        install=install,
    )
    try:
        yield info
    finally:
        if not reuse_dir:
            handle.down()


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    """A real heartbeat receiver on a local port for one test: `url_for(check)`, `pings_for(check)`."""
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def runs(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch
) -> CheckRuns:
    """Configurations and runs of checks as the probe, their heartbeats to this test's `receiver`."""
    return CheckRuns(tmp_path, sandbox, receiver, monkeypatch)


@pytest.fixture
def sb(sandbox: SandboxInfo) -> Iterator[SandboxInfo]:
    """The sandbox with no fault active, before the test and after it whatever happened."""
    faults.heal(state_dir=sandbox.state_dir)
    try:
        yield sandbox
    finally:
        faults.heal(state_dir=sandbox.state_dir)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the test item, so a fixture's teardown knows how the test went."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(autouse=True)
def _sandbox_restored(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test that used the sandbox and left a fault active or a component stopped, heal and
    restart what is missing, so the tests after it start from a working sandbox instead of failing
    for its reason. A test that failed half-way stays red for its own reason; one that passed but
    left the sandbox broken is a bug in that test, and gets a teardown error saying so. A real manager that
    panicked meanwhile (its pod's log under logs/pods) is a teardown error naming the panic: a crash the managers'
    own restart hides would otherwise surface as some later test's refused webhook."""
    if "sandbox" not in request.fixturenames:
        yield
        return
    info: SandboxInfo = request.getfixturevalue("sandbox")
    before = _disturbance(info)
    logs_before = _manager_log_sizes(info)
    yield
    crashed = _manager_panics(info, logs_before)
    _restore(request, info, before)
    if crashed:
        if info.systems:
            _systems_settled(request, info)  # the kubelet restarts it; the next test starts from it leading again
        more = f" (+{len(crashed) - 1} more)" if len(crashed) > 1 else ""
        pytest.fail(
            f"a real manager panicked during this test, {crashed[0]}{more}: what the test made is not what a "
            "cluster holds, or upstream has a bug worth naming",
            pytrace=False,
        )


def _manager_log_sizes(info: SandboxInfo) -> dict[Path, int]:
    return {path: path.stat().st_size for path in (info.state_dir / "logs" / "pods").glob("*.log")}


def _manager_panics(info: SandboxInfo, sizes: dict[Path, int]) -> list[str]:
    """The Go panics that ended a manager process since `sizes` were taken, each as `pod log: panic line`. A
    panic recovered per request (`http: panic serving ...`) ends nothing and is not one."""
    found = []
    for path in sorted((info.state_dir / "logs" / "pods").glob("*.log")):
        with path.open("rb") as log:
            log.seek(sizes.get(path, 0))
            text = log.read().decode(errors="replace")
        found += [f"{path.name}: {line.strip()}" for line in text.splitlines() if line.startswith("panic: ")]
    return found


def _restore(request: pytest.FixtureRequest, info: SandboxInfo, before: tuple[object, ...]) -> None:
    stopped = [name for name in COMPONENTS if not info.handle.procs.alive(name)]
    left = [rec["fault"] for rec in faults.active(info.state_dir)]
    if not stopped and not left:
        if info.systems and _disturbance(info) != before:
            _systems_settled(request, info)
        return
    what = f"faults left active: {left or 'none'}, components stopped: {stopped or 'none'}"
    try:
        for name in COMPONENTS:  # in dependency order; etcd and the API server restart the watchers
            if not info.handle.procs.alive(name):
                info.handle.start_component(name)
        faults.heal(state_dir=info.state_dir)
    except Exception as exc:  # any cause: reported as this test's teardown error
        pytest.fail(f"sandbox not restored after this test ({what}): {type(exc).__name__}: {exc}", pytrace=False)
    call = getattr(request.node, "report_call", None)
    if call is not None and call.passed:
        pytest.fail(
            f"this test passed but left the sandbox broken ({what}); restored for the next tests", pytrace=False
        )


def _disturbance(info: SandboxInfo) -> tuple[object, ...]:
    """What changes when a test disturbs the sandbox: a component restarted, a fault broken or healed."""
    records = [info.state_dir / "systems" / "faults.json", info.state_dir / "kubelet" / "faults.json"]
    stamps = tuple(path.stat().st_mtime_ns if path.exists() else 0 for path in records)
    return (*(info.handle.procs.pid(name) for name in COMPONENTS), *stamps)


def _systems_settled(request: pytest.FixtureRequest, info: SandboxInfo) -> None:
    """After a disturbance, wait for the real managers to lead and admit again before the next test.

    They exit when they lose the API server or their Lease, and the process node's kubelet restarts them with
    CrashLoopBackOff: a test that restarted a component, or healed a fault whose heal does not wait for them,
    leaves them coming back. A test must not fail for its predecessor's aftermath.
    """
    try:
        with Kube.from_kubeconfig(info.kubeconfig) as kube:
            sandbox_systems.wait_ready(kube, 180)
    except sandbox_systems.SystemsError as exc:
        pytest.fail(f"sandbox systems not ready again after this test: {exc}", pytrace=False)


@pytest.fixture(autouse=True)
def _fresh_secret_cache() -> Iterator[None]:
    """Secrets are cached per process (per cold start); each test is its own cold start."""
    from outpost import secrets

    secrets.clear_cache()
    yield
    secrets.clear_cache()
