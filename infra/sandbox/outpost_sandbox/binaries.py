"""The control-plane binaries: where they are cached and how they are built (`infra/sandbox/go/build.sh`).

Built once per pinned version under a machine-wide lock, so two sandboxes never build at once; a directory is
used only when every binary in it is executable and the build marked it complete.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

from outpost_sandbox.state import Log, SandboxError, stderr_log

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
    # infra/sandbox/outpost_sandbox/binaries.py -> infra/sandbox/go (the package sits beside its Go build)
    return Path(__file__).resolve().parents[1] / "go" / "build.sh"


def _complete(bin_dir: Path) -> bool:
    return (bin_dir / ".complete").is_file() and all(os.access(bin_dir / b, os.X_OK) for b in BINARIES)


def ensure_binaries(log: Log = stderr_log) -> Path:
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
