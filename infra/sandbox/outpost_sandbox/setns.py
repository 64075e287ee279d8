"""Running code with this thread inside a named network namespace (`/run/netns/<name>`), and always coming back.

Why setns instead of `ip netns exec`: a socket keeps the namespace it was created in, so a socket bound inside and
a thread switched back give one process both networks (the backends listen inside and reach the API server on the
host's loopback; the kubelet hands a pod's listening socket to a process in the host network).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

CLONE_NEWNET = 0x40000000


@contextmanager
def entered(name: str, error: Callable[[str], Exception]) -> Iterator[None]:
    """Run the body with this thread in network namespace `name`; sockets created there stay there.

    Failing to enter raises `error("setns into <name> failed: <reason>")`; failing to come back ends the process
    (exit 70): a thread left in the wrong namespace would send its traffic to the wrong network.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise error(f"setns into {name} failed: {os.strerror(ctypes.get_errno())}")
        try:
            yield
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:
                os._exit(70)  # never run on in a namespace this code did not mean to be in
    finally:
        os.close(own)
        os.close(target)
