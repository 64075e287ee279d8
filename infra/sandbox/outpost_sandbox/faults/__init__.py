"""Fault injection for the sandbox: `outpost sandbox break FAULT [--target T]` and `heal [FAULT]`.

Every fault is a real outcome seen through the API server, one per "what fails it" of the check
catalogue (docs/checks.md): a backend that answers 500 or hangs, a DaemonSet that the real controller
takes off a node, a node kwok stops renewing, a priority level that answers 429, a certificate
that is about to expire, a stopped etcd. Guarantees:
- `break_fault` returns only when the fault is observable (or raises `FaultError` saying what did
  not take effect); breaking an already active fault is a no-op.
- Each active fault is recorded with what is needed to undo it in `<state>/systems/faults.json`;
  `heal()` undoes every recorded fault (newest first), `heal(name)` only that one, and returns
  when the system is back to healthy for what that fault touched.
- Messages are one line naming the fault and the object; no credential appears in any of them.

Layout: one module per family (`backends`, `nodes`, `extension_objects`, `overload`,
`control_plane`) on top of `base`; `catalogue` names them all; `records` keeps the active faults
and is the Python API; `cli` is the command line.
"""

from outpost_sandbox.faults.base import TARGET_CHECKS, Fault, FaultError
from outpost_sandbox.faults.catalogue import FAULTS
from outpost_sandbox.faults.cli import register
from outpost_sandbox.faults.records import active, break_fault, heal

__all__ = ["FAULTS", "TARGET_CHECKS", "Fault", "FaultError", "active", "break_fault", "heal", "register"]
