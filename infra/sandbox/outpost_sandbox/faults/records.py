"""Active-fault records and the Python API (`break_fault`, `heal`, `active`).

Guarantees: each active fault is recorded with what is needed to undo it in
`<state>/systems/faults.json` (written atomically); breaking an already active fault is a no-op;
`heal()` undoes every recorded fault newest first, `heal(name)` only that one; an API failure
becomes one `FaultError` line naming the fault.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from outpost_sandbox import state, systems
from outpost_sandbox.backends.kube import SandboxApiError
from outpost_sandbox.faults.base import FaultContext, FaultError
from outpost_sandbox.faults.catalogue import FAULTS


# ---- records and the Python API -----------------------------------------------------------------------
def _records_path(state_dir: Path) -> Path:
    return systems.systems_dir(state_dir) / "faults.json"


def active(state_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """The active faults, oldest first: [{"fault", "target", "undo"}]."""
    path = _records_path(_state(state_dir))
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    if not isinstance(data, list):
        raise FaultError(f"fault records {path}: not a list")
    return data


def _save(state_dir: Path, records: list[dict[str, Any]]) -> None:
    path = _records_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(records, indent=2))
    tmp.replace(path)


def _state(state_dir: Path | str | None) -> Path:
    if state_dir is not None:
        return Path(state_dir)
    return Path(state.default_state_dir())


def break_fault(
    name: str, target: str | None = None, state_dir: Path | str | None = None, **options: Any
) -> dict[str, Any]:
    """Inject fault `name` (see FAULTS); returns its record. Idempotent for the same name+target."""
    fault = FAULTS.get(name)
    if fault is None:
        raise FaultError(f"fault {name!r}: unknown (known: {', '.join(sorted(FAULTS))})")
    sd = _state(state_dir)
    records = active(sd)
    for rec in records:
        if rec["fault"] == name and rec["target"] == target:
            return rec
    ctx = FaultContext(sd, target, options)
    try:
        undo = fault.apply(ctx)
    except SandboxApiError as exc:
        raise FaultError(f"fault {name}: {exc}") from None
    finally:
        ctx.close()
    rec = {"fault": name, "target": target, "undo": undo}
    _save(sd, [*records, rec])
    return rec


def heal(name: str | None = None, target: str | None = None, state_dir: Path | str | None = None) -> list[str]:
    """Undo active faults (all, or those named / with that target), newest first; returns what was healed."""
    sd = _state(state_dir)
    records = active(sd)
    healed: list[str] = []
    for rec in reversed(list(records)):
        if (name and rec["fault"] != name) or (target and rec["target"] != target):
            continue
        ctx = FaultContext(sd, rec["target"])
        try:
            FAULTS[rec["fault"]].heal(ctx, rec["undo"])
        except SandboxApiError as exc:
            raise FaultError(f"heal {rec['fault']}: {exc}") from None
        finally:
            ctx.close()
        records.remove(rec)
        _save(sd, records)
        healed.append(f"{rec['fault']}" + (f" ({rec['target']})" if rec["target"] else ""))
    return healed
