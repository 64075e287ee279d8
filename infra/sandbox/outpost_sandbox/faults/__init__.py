"""Fault injection for the sandbox: `outpost sandbox break FAULT [--target T]` and `heal [FAULT]`.

Every fault is a real outcome seen through the API server, one per "what fails it" of docs/checks.md.
`break_fault` returns only once the fault is observable (else `FaultError`); each active fault is recorded with
how to undo it in `<state>/systems/faults.json`, and `heal` returns once what it touched is healthy again.
Messages name fault and object, never a credential. One module per family over `base`; `records` is the API.
"""

from outpost_sandbox.faults.base import TARGET_CHECKS, Fault, FaultError
from outpost_sandbox.faults.catalogue import FAULTS
from outpost_sandbox.faults.cli import register
from outpost_sandbox.faults.records import active, break_fault, heal

__all__ = ["FAULTS", "TARGET_CHECKS", "Fault", "FaultError", "active", "break_fault", "heal", "register"]
