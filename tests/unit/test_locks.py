"""The dependency locks (`infra/locks/`, outpost.tooling.packaging.locks), offline: every committed lock is current for
pyproject.toml and its target (the staleness check CI runs: no index is asked, so a new release on PyPI cannot fail
it), and an edit to pyproject.toml's dependencies or extras without `make lock` is refused naming the file and
`make lock`, as are a missing lock, one made for another target and one `make lock` did not write. An environment's
subset is the core's closure plus what each of its extras adds, at the locked versions and hashes."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from kit.locks import project_with_locks
from outpost import registry
from outpost.errors import PackagingError
from outpost.tooling.packaging.locks import (
    CORE,
    LOCKED_EXTRAS,
    PYTHON_VERSION,
    TARGETS,
    Pin,
    declared_requirements,
    lock_file,
    parse_lock,
    read_lock,
    requirements_text,
)
from outpost.tooling.packaging.platforms import RUNTIME_PYTHON, lock_target

REPO = Path(__file__).resolve().parents[2]
# Marker values of each target, for a top-level requirement that carries a marker.
MACHINES = {"lambda-arm64": "aarch64", "lambda-x86_64": "x86_64", "cloudfunctions-x86_64": "x86_64"}


def names(pins: list[Pin]) -> set[str]:
    return {pin.name for pin in pins}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_committed_lock_is_current_and_pins_what_pyproject_toml_asks_for(target: str) -> None:
    # read_lock is what `outpost package` runs: a stale lock fails here with "... is stale: ... Run `make lock`".
    lock = read_lock(REPO, target)
    environment = {
        "python_version": PYTHON_VERSION,
        "python_full_version": f"{PYTHON_VERSION}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": MACHINES[target],
    }
    checked = 0
    for key, lines in declared_requirements(REPO).items():
        installs = set(lock.installs[CORE]) | set(lock.installs[key])
        for line in lines:
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                continue
            name = canonicalize_name(requirement.name)
            assert name in installs, f"{lock.shown}: {line} ({key}) is not installed with {key}"
            version = lock.pins[name].version
            assert requirement.specifier.contains(version, prereleases=True), f"{lock.shown}: {name}=={version}: {line}"
            checked += 1
    assert checked >= len(declared_requirements(REPO)[CORE]) + len(LOCKED_EXTRAS)
    assert all(pin.hashes for pin in lock.pins.values())


@pytest.mark.parametrize(
    ("old", "new", "change"),
    [
        (
            '"msgspec>=0.18,<1",',
            '"msgspec>=0.18,<1",\n  "rich>=13",',
            "the core dependencies changed in pyproject.toml",
        ),
        ('aws = ["boto3>=1.34"]', 'aws = ["boto3>=1.40"]', "extra 'aws' changed in pyproject.toml"),
        ('"requests>=2.31"]', '"requests>=2.31", "pyjwt>=2"]', "extra 'gcp' changed in pyproject.toml"),
    ],
)
def test_a_dependency_changed_without_make_lock_makes_every_lock_stale(
    tmp_path: Path, old: str, new: str, change: str
) -> None:
    root = project_with_locks(tmp_path)
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text()
    assert text.count(old) == 1, f"the case no longer applies to pyproject.toml: {old}"
    pyproject.write_text(text.replace(old, new))
    for target in TARGETS:
        with pytest.raises(PackagingError) as raised:
            read_lock(root, target)
        message = str(raised.value)
        assert message.startswith(f"infra/locks/{target}.txt is stale: {change} since it was made (+"), message
        assert message.endswith("Run `make lock` and commit it with pyproject.toml"), message


def test_reordering_pyproject_toml_leaves_the_locks_current(tmp_path: Path) -> None:
    root = project_with_locks(tmp_path)
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text()
    old = 'gcp = ["google-auth>=2.29", "requests>=2.31"]'
    assert old in text
    pyproject.write_text(text.replace(old, 'gcp = ["requests>=2.31", "google-auth>=2.29"]'))
    assert read_lock(root, "lambda-arm64").pins == read_lock(REPO, "lambda-arm64").pins


def test_a_missing_lock_is_refused_naming_the_file_and_make_lock(tmp_path: Path) -> None:
    root = project_with_locks(tmp_path)
    lock_file(root, "lambda-arm64").unlink()
    with pytest.raises(PackagingError) as raised:
        read_lock(root, "lambda-arm64")
    assert str(raised.value) == (
        "no dependency lock infra/locks/lambda-arm64.txt for AWS Lambda arm64: run `make lock` and commit infra/locks/"
    )


def test_a_lock_make_lock_did_not_write_or_wrote_for_another_target_is_refused(tmp_path: Path) -> None:
    root = project_with_locks(tmp_path)
    uv_alone = lock_file(root, "lambda-x86_64")
    uv_alone.write_text("".join(line for line in uv_alone.read_text().splitlines(True) if not line.startswith("#")))
    with pytest.raises(PackagingError, match=r"lambda-x86_64.txt is stale: it has no `# target =` record.*make lock"):
        read_lock(root, "lambda-x86_64")
    shutil.copy2(lock_file(root, "cloudfunctions-x86_64"), lock_file(root, "lambda-arm64"))
    with pytest.raises(PackagingError, match=r'lambda-arm64.txt is stale: made for \{"name": "cloudfunctions-x86_64"'):
        read_lock(root, "lambda-arm64")


def test_a_hand_edited_lock_is_refused(tmp_path: Path) -> None:
    root = project_with_locks(tmp_path)
    path = lock_file(root, "lambda-arm64")
    text = path.read_text()
    start = text.index("\nsix==")
    end = text.index("\n", text.index("# via", start))  # the block ends with its `# via` annotation
    path.write_text(text[:start] + text[end:])
    with pytest.raises(PackagingError, match=r"installs records and pins disagree \(not pinned: six;"):
        read_lock(root, "lambda-arm64")
    path.write_text(text.replace("\nsix==", "\n-e ./six\nsix=="))
    with pytest.raises(PackagingError, match=r"lambda-arm64.txt:\d+: not an exact pin: '-e ./six'"):
        read_lock(root, "lambda-arm64")


def test_pins_parse_with_their_extras_and_hashes_and_pins_without_hashes_are_refused() -> None:
    digest = "sha256:" + "a" * 64
    records, pins = parse_lock(
        f'# target = {{"name": "t"}}\nrequests[socks]==2.34.2 \\\n    --hash={digest}\n    # via demo\n'
        f"PySocks==1.7.1 \\\n    --hash={digest} \\\n    --hash={'sha256:' + 'b' * 64}\n",
        "lock.txt",
    )
    assert records == {"target": {"name": "t"}}
    assert {name: (pin.requirement, pin.version, len(pin.hashes)) for name, pin in pins.items()} == {
        "requests": ("requests[socks]==2.34.2", "2.34.2", 1),
        "pysocks": ("PySocks==1.7.1", "1.7.1", 2),
    }
    assert parse_lock(requirements_text(pins.values()), "again.txt")[1] == pins
    with pytest.raises(PackagingError, match=r"lock.txt: boto3==1.0 has no --hash: run `make lock`"):
        parse_lock("boto3==1.0\n", "lock.txt")
    with pytest.raises(PackagingError, match=r"lock.txt:1: not an exact pin: 'boto3>=1.0'"):
        parse_lock("boto3>=1.0\n", "lock.txt")


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_an_environments_subset_is_the_core_closure_plus_what_its_extras_add(target: str) -> None:
    lock = read_lock(REPO, target)
    core = names(lock.subset([]))
    assert {"pydantic", "pydantic-core", "httpx", "pyyaml", "msgspec", "prometheus-client"} <= core
    assert not core & {"boto3", "botocore", "cryptography", "google-auth", "functions-framework"}, core
    with_aws = names(lock.subset(["aws"]))
    assert {"boto3", "botocore", "s3transfer"} <= with_aws - core
    assert "cryptography" not in with_aws
    with_certificates = names(lock.subset(["certificates"]))
    assert {"cryptography", "cffi"} <= with_certificates - core
    assert not with_certificates & {"boto3", "google-auth"}
    # The union of the records: what an environment with several extras installs, and nothing else.
    both = lock.subset(["aws", "certificates"])
    assert names(both) == with_aws | with_certificates
    assert all(pin is lock.pins[pin.name] for pin in both)  # the locked version and hashes, as written
    assert names(lock.subset(LOCKED_EXTRAS)) == set(lock.pins)
    with pytest.raises(PackagingError, match=r"extra 'dev' is not locked \(locked: aws, gcp, cloudfunctions"):
        lock.subset(["dev"])


def test_the_locked_extras_are_every_extra_a_bundle_can_reach() -> None:
    optional = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert optional["all"] == [f"outpost[{','.join(LOCKED_EXTRAS)}]"]
    declared = {extra for spec in (*registry.checks(), *registry.jobs()) for extra in spec.extras}
    assert declared <= set(LOCKED_EXTRAS), declared
    assert ".".join(map(str, RUNTIME_PYTHON)) == PYTHON_VERSION
    for platform, architecture in [("aws-arm64", "arm64"), ("aws-x86_64", "x86_64"), ("host", "x86_64"), ("gcf", None)]:
        assert lock_target(platform, architecture) in TARGETS
