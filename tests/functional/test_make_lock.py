"""`make lock` (outpost.tooling.lock_writer.write_locks) against PyPI: it writes a lock that read_lock accepts,
keeps the pins already locked while pyproject.toml allows them (so refreshing after an unrelated edit changes
nothing), records closures whose union is the whole lock, and leaves the previous file in place when uv fails.
(Offline checks of the committed locks and of staleness: tests/unit/test_locks.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.locks import project_with_locks
from outpost.errors import PackagingError
from outpost.tooling.lock_writer import find_uv, write_locks
from outpost.tooling.packaging.locks import CORE, LOCKED_EXTRAS, lock_file, read_lock

REPO = Path(__file__).resolve().parents[2]
TARGET = "lambda-arm64"


def test_make_lock_rewrites_a_current_lock_to_the_same_pins(tmp_path: Path) -> None:
    root = project_with_locks(tmp_path)
    committed = read_lock(REPO, TARGET)
    # The committed pins stay as uv's preferences; the records go, so read_lock below accepts only what was written.
    path = lock_file(root, TARGET)
    path.write_text("".join(line for line in path.read_text().splitlines(True) if not line.startswith("#")))
    with pytest.raises(PackagingError, match="has no `# target =` record"):
        read_lock(root, TARGET)
    (summary,) = write_locks(root, find_uv(), targets=[TARGET])
    assert summary.startswith(f"infra/locks/{TARGET}.txt: {len(committed.pins)} pins (core "), summary
    written = read_lock(root, TARGET)
    now = {(name, pin.version) for name, pin in written.pins.items()}
    moved = now ^ {(name, pin.version) for name, pin in committed.pins.items()}
    # Only a locked release withdrawn from PyPI since (yanked) can move a pin here: then the lock needs `make lock`.
    assert not moved, f"make lock moved pins of {TARGET}: {sorted(moved)}"
    assert written.installs == committed.installs
    assert set(written.installs) == {CORE, *LOCKED_EXTRAS}


def test_a_failed_refresh_leaves_the_previous_lock(tmp_path: Path) -> None:
    root = project_with_locks(tmp_path)
    before = lock_file(root, TARGET).read_bytes()
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('aws = ["boto3>=1.34"]', 'aws = ["boto3>=1.34,<1.0"]'))
    with pytest.raises(PackagingError, match=rf"locking {TARGET}: uv pip compile failed: .*boto3"):
        write_locks(root, find_uv(), targets=[TARGET])
    assert lock_file(root, TARGET).read_bytes() == before
