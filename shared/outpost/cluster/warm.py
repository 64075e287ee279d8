"""What a warm function instance remembers between runs: one process-wide store, keyed by cluster and purpose.

Platforms reuse an instance for minutes, so one run's observations (incremental collections, apiserver-latency's
scrape) can spare the next most reads; a `Cluster` is per run, this store outlives it. Keys include the cluster's
identity (never a credential), so identities never share state; at most `MAX_ENTRIES`, aged entries dropped;
`recall` hands an entry over to one owner at a time. Nothing goes to disk: it is a saving, never a source of
truth, and a cold start reads in full.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

MAX_ENTRIES = 64
"""Collections and scrapes kept per process: a function runs one check (a handful of collections); `outpost
run --all` in one process a few dozen."""


@dataclass
class _Entry:
    value: Any
    kept_at: float


_lock = threading.Lock()
_entries: OrderedDict[tuple[Hashable, ...], _Entry] = OrderedDict()


def recall(identity: Hashable, key: Hashable, max_age_seconds: float) -> Any | None:
    """What was kept under (`identity`, `key`) at most `max_age_seconds` ago, or None. It is handed over: the entry
    leaves the store until its owner keeps it again, so two runs in one process (`run --all` runs checks in
    threads) never change one state at once; the second finds nothing and reads in full."""
    with _lock:
        entry = _entries.pop((identity, key), None)
        if entry is None or time.monotonic() - entry.kept_at > max_age_seconds:
            return None
        return entry.value


def peek(identity: Hashable, key: Hashable) -> Any | None:
    """What is kept under (`identity`, `key`), left in place (for tests and diagnostics; never to change it)."""
    with _lock:
        entry = _entries.get((identity, key))
        return entry.value if entry is not None else None


def keep(identity: Hashable, key: Hashable, value: Any) -> None:
    """Keep `value` under (`identity`, `key`), replacing what was there; the oldest entries go past the bound."""
    with _lock:
        _entries[(identity, key)] = _Entry(value, time.monotonic())
        _entries.move_to_end((identity, key))
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)


def drop(identity: Hashable, key: Hashable) -> None:
    """Forget one entry (its owner no longer trusts it)."""
    with _lock:
        _entries.pop((identity, key), None)


def forget() -> None:
    """Forget everything: the next run of every check reads in full."""
    with _lock:
        _entries.clear()


def size() -> int:
    with _lock:
        return len(_entries)
