"""Ending a run at once when the process is told to stop (SIGINT, SIGTERM).

A stopped run must not go on to ping, nor leave an exec credential plugin behind. `install` makes the signals
kill every tracked process group and child, print one last line and `os._exit` with 128 + signal, waiting for no
thread; `requested()` lets the runner refuse to ping after a stop, and `sleep` (the heartbeat's backoff) returns
early on one. It imports nothing of Outpost's, so every layer may use it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

_lock = threading.Lock()
_live: set[subprocess.Popen[bytes]] = set()
_stop = threading.Event()
_stopping = False
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals `install` turns into an immediate, quiet stop."""


class Stopped(Exception):
    """Raised where work would start after a stop was asked for (a heartbeat attempt, for one)."""


def exit_code(signum: int) -> int:
    """The exit status of a process stopped by `signum`: 128 + its number (SIGINT 130, SIGTERM 143)."""
    return 128 + int(signum)


def signal_name(signum: int) -> str:
    with contextlib.suppress(ValueError):
        return signal.Signals(signum).name
    return f"signal {signum}"


@contextlib.contextmanager
def tracked(process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """`process`, registered so that a stop kills its process group, for as long as the block runs."""
    with _lock:
        _live.add(process)
    try:
        if _stop.is_set():  # the stop came first: request_stop() may already have swept the registry
            _killpg(process.pid)
        yield process
    finally:
        with _lock:
            _live.discard(process)


def kill_tracked() -> None:
    """SIGKILL every registered child's process group (they were started in sessions of their own)."""
    with _lock:
        processes = list(_live)
    for process in processes:
        _killpg(process.pid)


def _killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def request_stop() -> None:
    """Record that the process was told to stop, and kill the children it started."""
    _stop.set()
    kill_tracked()


def requested() -> bool:
    """True once a stop was asked for."""
    return _stop.is_set()


def reset() -> None:
    """Forget a stop (a test that asked for one in-process; nothing in the product calls it)."""
    _stop.clear()


def check(what: str) -> None:
    """Raise `Stopped` naming `what` if a stop was asked for (called right before work that must not start)."""
    if _stop.is_set():
        raise Stopped(f"the run was stopped before {what}")


def sleep(seconds: float) -> None:
    """`time.sleep`, cut short by a stop (a backoff never outlasts the signal)."""
    _stop.wait(max(0.0, seconds))


def kill_children() -> None:
    """SIGKILL every child process of this one that is still running, with its process group when it leads one.

    Linux (`/proc`); elsewhere only the tracked processes are killed. Used only when the process is about to
    end: anything it started (a credential plugin that was not tracked, its own children) goes with it.
    """
    me = os.getpid()
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if len(fields) < 3 or int(fields[1]) != me or fields[0] == b"Z":
                continue
            pid, group = int(entry), int(fields[2])
            if group == pid:
                _killpg(pid)
            else:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)


StopHook = Callable[[int], None]


def install(on_stop: StopHook | None = None) -> Callable[[], None]:
    """Make SIGINT and SIGTERM end this process at once (see the module doc); returns the undo.

    Only the main thread may set signal handlers: elsewhere this does nothing (and the undo is a no-op).
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, _frame: FrameType | None) -> None:
        _end(signum, on_stop)

    previous: dict[int, Any] = {}
    for signum in STOP_SIGNALS:
        previous[signum] = signal.getsignal(signum)
        # Python's handlers are installed without SA_RESTART: a blocking call of the main thread (a lock wait,
        # a socket read) returns EINTR, the handler runs at once, and it never returns.
        signal.signal(signum, handler)

    def undo() -> None:
        for signum, before in previous.items():
            if signal.getsignal(signum) is handler and before is not None:
                signal.signal(signum, before)

    return undo


def _end(signum: int, on_stop: StopHook | None) -> None:
    """The handler: stop, kill, one last line, flush, exit. A second signal during it exits at once."""
    global _stopping
    code = exit_code(signum)
    if _stopping:
        os._exit(code)
    _stopping = True
    try:
        request_stop()
        kill_children()
        if on_stop is not None:
            on_stop(signum)
    except BaseException:  # noqa: BLE001, S110 - the process ends either way; a failed last line must not stop it
        pass
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            if stream is not None:
                stream.flush()
    os._exit(code)


def write_line(fd: int, text: str) -> None:
    """Write one line straight to a file descriptor (safe in a signal handler: no buffered stream is re-entered)."""
    data = (text.rstrip("\n") + "\n").encode("utf-8", "replace")
    with contextlib.suppress(OSError):
        while data:
            written = os.write(fd, data)
            data = data[written:]
