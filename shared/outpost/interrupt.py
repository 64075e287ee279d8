"""Ending a run at once when the process is told to stop (SIGINT, SIGTERM).

Why: a run that is interrupted must not go on to ping (the operator, or the platform, stopped it before
it had observed anything), and must not leave an exec credential plugin running behind it.

Guarantees:
- `tracked(process)` registers a child process (started with `start_new_session=True`) for as long as
  the block runs; `kill_tracked()` SIGKILLs every registered process group;
- `requested()` is True once a stop was asked for; the runner asks it before it pings, and never pings
  after a stop.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_live: set[subprocess.Popen[bytes]] = set()
_stop = threading.Event()


@contextlib.contextmanager
def tracked(process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """`process`, registered so that a stop kills its process group, for as long as the block runs."""
    with _lock:
        _live.add(process)
    try:
        yield process
    finally:
        with _lock:
            _live.discard(process)


def kill_tracked() -> None:
    """SIGKILL every registered child's process group (they were started in sessions of their own)."""
    with _lock:
        processes = list(_live)
    for process in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def request_stop() -> None:
    """Record that the process was told to stop, and kill the children it started."""
    _stop.set()
    kill_tracked()


def requested() -> bool:
    """True once a stop was asked for."""
    return _stop.is_set()
