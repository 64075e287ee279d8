"""Backend faults: the health backends (manager health, webhooks, node daemons, the LS workload)
answer wrongly through the API server's proxy: reset, 500, hang, slow, wrong body, bad TLS.

Guarantees: each apply switches the backend daemon's behaviour for the target(s) and returns once
the change is visible; heal switches it back.
"""

from __future__ import annotations

from typing import Any

from outpost_sandbox.backends.behaviour import (
    TARGETS,
    set_target,
)
from outpost_sandbox.faults.base import (
    Apply,
    FaultContext,
    FaultError,
    Heal,
    required_target,
)


# ---- backend behaviour -----------------------------------------------------------------------------
def backend_fault(mode: str, targets: frozenset[str] | None = None) -> tuple[Apply, Heal]:
    allowed = sorted(targets or TARGETS)

    def apply(ctx: FaultContext) -> dict[str, Any]:
        target = required_target(ctx, allowed, "backend target")
        delay = int(ctx.options.get("delay_ms") or 3000) if mode == "slow" else 0
        try:
            set_target(ctx.sdir, target, mode, delay)
        except ValueError as exc:
            raise FaultError(str(exc)) from None
        return {"target": target}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        set_target(ctx.sdir, undo["target"], "ok")

    return apply, heal
