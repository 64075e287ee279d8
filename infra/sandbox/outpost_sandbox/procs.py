"""Start, identify and stop the sandbox's long-running processes.

Each runs in its own session (it outlives `up`, and Ctrl-C does not reach it), logging to `<state>/logs`.
Its record holds pid and kernel start time, and a process is ours only when both match, so a recycled pid is
never signalled and `stop` ends exactly what this sandbox started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from outpost_sandbox.poll import PollTimeout, poll_until


@dataclass(frozen=True)
class ProcRecord:
    name: str
    pid: int
    start_ticks: int
    argv0: str


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks) of `pid`, or None if there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name may contain spaces and parentheses: fields resume after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def _reap(pid: int) -> None:
    # Only our own children can be reaped; for others the kernel's init does it.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _exited(pid: int, start_ticks: int) -> bool:
    """Whether the process has fully exited, every thread of it, so its sockets and files are closed.

    A multithreaded process (every Go binary) whose main thread has exited already shows as a zombie
    while its other threads are still being torn down and still hold its listening sockets; a restart
    in that window fails with "address already in use". So a zombie counts as exited only once its
    thread list holds nothing but the main thread.
    """
    _reap(pid)
    stat = _proc_stat(pid)
    if stat is None or stat[1] != start_ticks:
        return True
    if stat[0] not in ("Z", "X"):
        return False
    try:
        return os.listdir(f"/proc/{pid}/task") == [str(pid)]
    except OSError:
        return True


class ProcessTable:
    """The processes of one sandbox, keyed by component name."""

    def __init__(self, run_dir: Path, log_dir: Path) -> None:
        self.run_dir = run_dir
        self.log_dir = log_dir

    def log_path(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def _record_path(self, name: str) -> Path:
        return self.run_dir / f"{name}.json"

    def record(self, name: str) -> ProcRecord | None:
        path = self._record_path(name)
        try:
            data = json.loads(path.read_text())
            return ProcRecord(name, int(data["pid"]), int(data["start_ticks"]), str(data["argv0"]))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            # A corrupt record cannot identify a process: treat as not running (fail closed for
            # signalling: we never kill on a guess).
            return None

    def alive(self, name: str) -> bool:
        rec = self.record(name)
        if rec is None:
            return False
        stat = _proc_stat(rec.pid)
        if stat is None or stat[1] != rec.start_ticks:
            return False
        if stat[0] in ("Z", "X"):
            _reap(rec.pid)
            return False
        return True

    def pid(self, name: str) -> int | None:
        rec = self.record(name)
        return rec.pid if rec is not None and self.alive(name) else None

    def start(
        self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> int:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_path(name)
        with log.open("ab") as fh:
            # argv holds file paths and ports only (tokens live in files), so it is safe to log.
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            fh.write(f"=== outpost sandbox: starting {name} at {stamp}: {' '.join(argv)}\n".encode())
            fh.flush()
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=dict(env) if env is not None else None,
                cwd=cwd,
            )
        stat = _proc_stat(proc.pid)
        ticks = stat[1] if stat is not None else -1
        tmp = self._record_path(name).with_suffix(".tmp")
        tmp.write_text(json.dumps({"pid": proc.pid, "start_ticks": ticks, "argv0": argv[0]}))
        os.replace(tmp, self._record_path(name))
        return proc.pid

    def stop(self, name: str, timeout: float = 20.0, kill: bool = False) -> bool:
        """Stop `name` if it is ours and running. Returns whether a process was signalled.

        SIGTERM first (the API server and etcd shut down cleanly on it), SIGKILL after
        `timeout` seconds or at once with `kill=True`.
        """
        rec = self.record(name)
        if rec is None or not self.alive(name):
            self._record_path(name).unlink(missing_ok=True)
            return False
        sig = signal.SIGKILL if kill else signal.SIGTERM
        self._signal(rec, sig)

        def exited() -> bool:
            return _exited(rec.pid, rec.start_ticks)

        try:
            poll_until(f"{name} to exit", timeout, exited, interval=0.1)
        except PollTimeout:
            self._signal(rec, signal.SIGKILL)
            with contextlib.suppress(PollTimeout):
                poll_until(f"{name} to exit after SIGKILL", 10, exited, interval=0.1)
        self._record_path(name).unlink(missing_ok=True)
        return True

    def _signal(self, rec: ProcRecord, sig: signal.Signals) -> None:
        stat = _proc_stat(rec.pid)
        if stat is None or stat[1] != rec.start_ticks:
            return
        # The process leads its own session/group (start_new_session); signalling the group also
        # ends helpers it may have spawned, and that group holds only what we started.
        try:
            if os.getpgid(rec.pid) == rec.pid:
                os.killpg(rec.pid, sig)
            else:
                os.kill(rec.pid, sig)
        except ProcessLookupError:
            pass


def tail(path: Path, lines: int = 30) -> str:
    """The last `lines` lines of a log file (bounded read, so a huge log costs nothing)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(data.splitlines()[-lines:])
