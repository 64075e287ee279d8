"""`outpost package`: a bad configuration is refused before anything is written; a good one gives a bundle whose
entry modules import from it alone, with byte code beside every module and nothing left from a previous build.

Other platforms and foreign-architecture files are refused. The bundle holds only the product, with exactly the
lock's subset for the environment's extras (no sandbox code, no Cloud Functions server on Lambda, no AWS SDK for
GCF unless used); a stale or missing lock refuses the build. Examples, Serverless and cfn-lint: test_deployment.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from outpost.cli import main
from outpost.config import parse_settings
from outpost.errors import PackagingError
from outpost.tooling.packaging.bundle import architecture_mismatches, forbidden_entries
from outpost.tooling.packaging.command import build, describe
from outpost.tooling.packaging.locks import LOCK_DIRECTORY, normalized_name, read_lock
from outpost.tooling.packaging.platforms import host_architecture, lock_target, required_extras

REPO = Path(__file__).resolve().parents[2]


def project_copy(tmp_path: Path, environment: Mapping[str, object]) -> Path:
    """A minimal project tree (entry modules + one environment) to package from."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "functions", root / "functions")
    (root / "infra" / "environments").mkdir(parents=True)
    (root / "infra" / "environments" / "stage1.yaml").write_text(yaml.safe_dump(environment))
    return root


# A deployable Lambda environment built with this machine's wheels (`--platform host`), so its bundle imports here.
GOOD = {
    "environment": "stage1",
    "deploy": {"platform": "aws", "region": "eu-west-1", "architecture": host_architecture()},
    "cluster": {
        "name": "c",
        "auth": {"mode": "token", "server": "https://k8s.example.test", "token": "ssm:/outpost/stage1/token"},
    },
    "vigilmon": {"channels": {"page": ["pagerduty"], "notify": ["slack"]}},
    "checks": {
        "apiserver-health": {"schedule_minutes": 5, "heartbeat": "ssm:/outpost/stage1/heartbeat/api", "monitor_id": "1"}
    },
}


def test_bad_configuration_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = {**GOOD, "checks": {"apiserver-health": {"schedule_minutes": 0, "params": {"bogus": 1}}}}
    root = project_copy(tmp_path, bad)
    out = tmp_path / "out"
    assert main(["package", "--env", "stage1", "--root", str(root), "--output", str(out)]) == 64
    err = capsys.readouterr().err
    assert "checks.apiserver-health.schedule_minutes: " in err
    assert "checks.apiserver-health.params.bogus: " in err
    assert not out.exists()


GKE = {
    "environment": "stage1",
    "deploy": {"platform": "gcf", "region": "europe-west1", "project": "outpost-test"},
    "cluster": {"name": "c", "auth": {"mode": "gke", "server": "https://k8s.example.test", "ca_data": "Q0E="}},
    "vigilmon": {"api_key": "gcpsm:projects/p/secrets/vigilmon", "channels": {"page": ["p"], "notify": ["n"]}},
    "checks": {"apiserver-health": {"heartbeat": "gcpsm:projects/p/secrets/heartbeat-api", "monitor_id": "1"}},
}

# What only the Cloud Functions server brings; never in a Lambda bundle.
CLOUD_FUNCTIONS_SERVER = {"functions_framework", "flask", "werkzeug", "gunicorn", "click", "itsdangerous"}
SANDBOX = {"outpost/sandbox", "outpost_sandbox"}


def source_project(tmp_path: Path, environment: Mapping[str, object]) -> Path:
    """A project copy with the package source, and a sandbox in it as the source tree may have one."""
    root = project_copy(tmp_path, environment)
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(REPO / LOCK_DIRECTORY, root / LOCK_DIRECTORY)
    shutil.copytree(REPO / "shared", root / "shared", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    sandbox = root / "shared" / "outpost" / "sandbox"
    if not sandbox.exists():  # the sandbox moved to its own distribution: keep proving it would be left out
        sandbox.mkdir()
        (sandbox / "__init__.py").write_text('"""Development-only code that must never be bundled."""\n')
    return root


def locked_versions(root: Path, platform: str, extras: list[str]) -> dict[str, str]:
    """`{name: version}` the lock of `platform`'s bundles holds for the core and `extras`."""
    return {pin.name: pin.version for pin in read_lock(root, lock_target(platform, host_architecture())).subset(extras)}


def dist_info_versions(names: set[str]) -> dict[str, str]:
    """`{normalized name: version}` of the `<name>-<version>.dist-info` directories among a bundle's entries."""
    found = {name.split("/")[0].removesuffix(".dist-info") for name in names if ".dist-info/" in name}
    return {normalized_name(name): version for name, _, version in (entry.partition("-") for entry in found)}


def top_level(names: set[str]) -> set[str]:
    """Importable top-level names in a bundle, and `outpost/<subpackage>` for the product's own packages."""
    tops = {name.split("/")[0].split("-")[0].removesuffix(".py").lower() for name in names}
    return tops | {"/".join(name.split("/")[:2]) for name in names if name.startswith("outpost/")}


def unpack(archive: Path, into: Path, what: str) -> tuple[str, set[str]]:
    """Extract `archive` into `into`; its summary (printed under `what`, the test log's record) and its entries."""
    summary = describe(archive)
    print(f"{what}: {summary}")
    with zipfile.ZipFile(archive) as bundle:
        bundle.extractall(into)
        return summary, set(bundle.namelist())


def test_lambda_bundle_holds_only_the_product_and_cold_starts(tmp_path: Path) -> None:
    root = source_project(tmp_path, GOOD)
    stale = tmp_path / "out" / "stage1" / "outpost-old.zip"  # what a previous build left: gone after this one
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    target = build("stage1", tmp_path / "out", platform="host", root=root)
    assert sorted(path.name for path in target.iterdir()) == ["deployment.json", "outpost-stage1.zip"]
    archive = target / "outpost-stage1.zip"
    unpacked = tmp_path / "task"
    summary, names = unpack(archive, unpacked, "Lambda bundle (token auth, ssm: secrets)")
    assert {
        "functions/apiserver_health/main.py",
        "infra/environments/stage1.yaml",
        "outpost/runner.py",
        "outpost/runtime/aws_lambda.py",
        "outpost/cluster/auth/kubeconfig.py",
    } <= names, summary
    tops = top_level(names)
    assert not tops & SANDBOX, f"sandbox code in the bundle: {sorted(tops & SANDBOX)}"
    assert "outpost/tooling" not in tops, f"operator tooling in the bundle: {sorted(tops)}"
    assert "outpost/cli.py" not in names, "the command line (it imports the tooling) in the bundle"
    assert not tops & CLOUD_FUNCTIONS_SERVER, f"Cloud Functions server in the Lambda bundle: {sorted(tops)}"
    # ssm: references need the AWS SDK; nothing in this environment needs kubernetes, google-auth or cryptography.
    assert {"boto3", "botocore", "pydantic", "httpx", "yaml", "msgspec"} <= tops, summary
    assert not tops & {"kubernetes", "google", "cryptography", "requests"}, f"unreached dependency: {sorted(tops)}"
    assert not [name for name in names if name.endswith("/RECORD") or name.endswith("direct_url.json")], summary
    # Byte code for the runtime's Python beside every module, valid for its source and never re-checked.
    for source in [name for name in names if name.startswith("outpost/") and name.endswith(".py")]:
        folder, _, module = source.rpartition("/")
        with zipfile.ZipFile(archive) as bundle:
            cached = bundle.read(f"{folder}/__pycache__/{module.removesuffix('.py')}.cpython-311.pyc")
            assert cached[:4] == importlib.util.MAGIC_NUMBER, source
            assert int.from_bytes(cached[4:8], "little") == 0b01, source  # hash-based, unchecked
            assert cached[8:16] == importlib.util.source_hash(bundle.read(source)), source
    assert not [name for name in names if name.startswith("bin/")], summary
    # Exactly the lock's subset for the core and `aws`, at its versions (installed with its hashes, nothing resolved).
    locked = locked_versions(root, "host", ["aws"])
    assert dist_info_versions(names) == locked, summary
    assert json.loads((target / "deployment.json").read_text())["build"]["dependencies"] == locked
    # The unsplit bundle was 40 MB (5954 files); this environment needs far less, byte code included.
    assert archive.stat().st_size < 30_000_000, summary
    # A cold start as Lambda does it: only the bundle on sys.path, cwd = bundle root, config relative to it.
    probe = (
        "import sys; sys.path[:0] = ['.']; import importlib; m = importlib.import_module("
        "'functions.apiserver_health.main'); import outpost, pydantic_core, boto3, msgspec._core; "
        "print(m.handler.__name__, m.http.__name__, outpost.__file__, pydantic_core.__file__, boto3.__file__, "
        "msgspec._core.__file__)"
    )
    process = run_unpacked(unpacked, "-I", "-S", "-c", probe)
    handler, http, package, binary, sdk, decoder = process.stdout.split()
    assert (handler, http) == ("handler_apiserver_health", "http_apiserver_health")
    assert package == str(unpacked / "outpost" / "__init__.py")
    assert binary.startswith(str(unpacked))
    assert decoder.startswith(str(unpacked / "msgspec"))  # the LIST decoder's compiled core, from the bundle
    assert sdk == str(unpacked / "boto3" / "__init__.py")  # the ssm: path's SDK loads from the bundle alone


def run_unpacked(unpacked: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in the unpacked bundle, with the stage1 environment as its configuration; it must succeed."""
    process = subprocess.run(
        [sys.executable, *args],
        cwd=unpacked,
        capture_output=True,
        text=True,
        env={"OUTPOST_CONFIG": "infra/environments/stage1.yaml", "PATH": os.environ["PATH"]},
        check=False,
        timeout=120,
    )
    assert process.returncode == 0, process.stderr
    return process


def hashed_pins(text: str) -> dict[str, tuple[str, frozenset[str]]]:
    """`{name: (version, hashes)}` of a requirements file that must hold only comments and `name==version` pins,
    each followed by its `--hash=sha256:` lines (what pip's hash-checking mode installs, and nothing else)."""
    pins: dict[str, tuple[str, frozenset[str]]] = {}
    name = ""
    for line in text.splitlines():
        stripped = line.strip().removesuffix("\\").strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line[:1].isspace():
            assert re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", stripped), line
            version, hashes = pins[name]
            pins[name] = (version, hashes | {stripped.removeprefix("--hash=")})
            continue
        requirement, separator, version = stripped.partition("==")
        assert separator, line
        name = normalized_name(requirement.partition("[")[0])
        assert re.fullmatch(r"[\w.+!-]+", version), line
        pins[name] = (version, frozenset())
    assert all(hashes for _version, hashes in pins.values()), "a pin without hashes: pip would refuse the file"
    return pins


def test_cloud_functions_source_has_its_server_and_no_aws_sdk_it_does_not_reach(tmp_path: Path) -> None:
    root = source_project(tmp_path, GKE)
    target = build("stage1", tmp_path / "out", platform="gcf", root=root)
    archive = target / "outpost-stage1-gcf.zip"
    unpacked = tmp_path / "source"
    summary, names = unpack(archive, unpacked, "Cloud Functions source (gke auth, gcpsm: secrets)")
    requirements_text = (unpacked / "requirements.txt").read_text()
    pins = hashed_pins(requirements_text)
    required = set(pins)
    assert {"functions-framework", "google-auth", "requests", "pydantic", "httpx", "pyyaml"} <= required
    # cryptography may ride in with google-auth; the AWS SDK and the official client never do.
    assert not required & {"boto3", "botocore", "s3transfer", "kubernetes", "outpost"}, required
    # The whole closure is pinned, with the hashes of its files, to the Cloud Functions lock's: exactly its subset
    # for the core, `gcp` and `cloudfunctions`, never left to Cloud Build's resolver.
    assert {"pydantic-core", "httpcore", "flask", "werkzeug", "msgspec"} <= required, required
    lock = (root / "infra/locks/cloudfunctions-x86_64.txt").read_text()
    assert pins == {name: hashed_pins(lock)[name] for name in pins}
    assert {name: version for name, (version, _hashes) in pins.items()} == locked_versions(
        root, "gcf", ["gcp", "cloudfunctions"]
    )
    assert json.loads((target / "deployment.json").read_text())["build"]["dependencies"] == {
        name: version for name, (version, _hashes) in pins.items()
    }
    again = build("stage1", tmp_path / "again", platform="gcf", root=root) / "outpost-stage1-gcf.zip"
    assert again.read_bytes() == archive.read_bytes()  # the same inputs resolve to the same pins, byte for byte
    assert {
        "main.py",
        "requirements.txt",
        "functions/apiserver_health/main.py",
        "infra/environments/stage1.yaml",
        "outpost/runtime/gcf.py",
    } <= names, summary
    # Only the product is vendored: Cloud Functions installs requirements.txt itself.
    assert top_level(names) - {"main", "requirements.txt", "functions", "infra", "__pycache__"} == {
        "outpost",
        *{"/".join(name.split("/")[:2]) for name in names if name.startswith("outpost/")},
    }, summary
    assert not top_level(names) & SANDBOX, summary
    # The generated main.py exports the check's HTTP target under the name the deployment's --entry-point
    # uses, and the functions-framework serves it from the source (a PUT is answered without touching a cluster).
    probe = (
        "import sys; sys.path.insert(0, '.'); import functions_framework, main, outpost; "
        "app = functions_framework.create_app(target='apiserver_health', source='main.py'); "
        "print(main.apiserver_health.__name__, outpost.__file__, app.test_client().put('/').status_code)"
    )
    process = run_unpacked(unpacked, "-c", probe)
    assert process.stdout.split() == ["http_apiserver_health", str(unpacked / "outpost" / "__init__.py"), "405"]


def test_a_certificate_check_brings_the_certificates_extra_at_the_locked_versions(tmp_path: Path) -> None:
    environment = json.loads(json.dumps(GOOD))
    environment["checks"]["apiserver-cert-expiry"] = {"heartbeat": "ssm:/outpost/stage1/heartbeat/c", "monitor_id": "2"}
    root = source_project(tmp_path, environment)
    target = build("stage1", tmp_path / "out", platform="host", root=root)
    archive = target / "outpost-stage1.zip"
    unpacked = tmp_path / "task"
    with zipfile.ZipFile(archive) as bundle:
        names = set(bundle.namelist())
        bundle.extractall(unpacked)
    locked = locked_versions(root, "host", ["aws", "certificates"])
    assert {"cryptography", "cffi", "boto3"} <= set(locked)
    assert dist_info_versions(names) == locked, describe(archive)
    # The X.509 parser loads from the bundle alone, its compiled core included.
    probe = "import sys; sys.path[:0] = ['.']; import cryptography.x509 as x509; print(x509.__file__)"
    process = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe], cwd=unpacked, capture_output=True, text=True, check=False, timeout=60
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout.strip() == str(unpacked / "cryptography" / "x509" / "__init__.py")


def test_a_stale_or_missing_lock_refuses_the_build_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = source_project(tmp_path, GOOD)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('aws = ["boto3>=1.34"]', 'aws = ["boto3>=1.40"]'))
    out = tmp_path / "out"
    assert main(["package", "--env", "stage1", "--platform", "host", "--root", str(root), "--output", str(out)]) == 2
    lock = f"infra/locks/lambda-{host_architecture()}.txt"
    assert capsys.readouterr().err.strip() == (
        f"outpost package: {lock} is stale: extra 'aws' changed in pyproject.toml since it was made (+boto3>=1.40, "
        "-boto3>=1.34). Run `make lock` and commit it with pyproject.toml"
    )
    assert not out.exists()
    (root / lock).unlink()
    with pytest.raises(PackagingError, match=rf"no dependency lock {lock} for AWS Lambda .*: run `make lock`"):
        build("stage1", out, platform="host", root=root)
    assert not out.exists()


def test_a_platform_the_environment_does_not_deploy_to_is_refused(tmp_path: Path) -> None:
    other = "arm64" if host_architecture() == "x86_64" else "x86_64"
    root = source_project(tmp_path, GOOD)
    with pytest.raises(PackagingError, match=f"deploys aws-{host_architecture()}"):
        build("stage1", tmp_path / "out", platform=f"aws-{other}", root=root)
    with pytest.raises(PackagingError, match="deploys to Cloud Functions"):
        build("stage1", tmp_path / "out", platform="aws-arm64", root=source_project(tmp_path / "gcf", GKE))
    assert not (tmp_path / "out").exists()


ELF_X86_64 = b"\x7fELF\x02\x01\x01" + b"\x00" * 11 + (62).to_bytes(2, "little")
ELF_AARCH64 = b"\x7fELF\x02\x01\x01" + b"\x00" * 11 + (183).to_bytes(2, "little")


def test_files_built_for_another_architecture_are_found(tmp_path: Path) -> None:
    staging = tmp_path / "bundle"
    (staging / "fast").mkdir(parents=True)
    (staging / "fast" / "_speedups.cpython-311-x86_64-linux-gnu.so").write_bytes(ELF_X86_64 + b"rest")
    (staging / "fast" / "_other.cpython-311-aarch64-linux-gnu.so").write_bytes(ELF_AARCH64 + b"rest")
    (staging / "fast.libs").mkdir()
    (staging / "fast.libs" / "libz.so.1").write_bytes(ELF_X86_64)
    (staging / "fast-1.0.dist-info").mkdir()
    (staging / "fast-1.0.dist-info" / "WHEEL").write_text(
        "Wheel-Version: 1.0\nTag: cp311-cp311-manylinux_2_17_x86_64\n"
    )
    (staging / "pure-1.0.dist-info").mkdir()
    (staging / "pure-1.0.dist-info" / "WHEEL").write_text("Wheel-Version: 1.0\nTag: py3-none-any\n")
    assert architecture_mismatches(staging, "arm64") == [
        "fast-1.0.dist-info/WHEEL (wheel tag manylinux_2_17_x86_64)",
        "fast.libs/libz.so.1 (x86_64)",
        "fast/_speedups.cpython-311-x86_64-linux-gnu.so (x86_64)",
    ]
    assert architecture_mismatches(staging, "x86_64") == ["fast/_other.cpython-311-aarch64-linux-gnu.so (arm64)"]


@pytest.mark.parametrize(
    ("auth", "references", "platform", "extras"),
    [
        ({"mode": "token", "server": "https://k", "token": "env:T"}, {}, "aws-arm64", []),
        ({"mode": "token", "server": "https://k", "token": "secretsmanager:outpost/t#token"}, {}, "host", ["aws"]),
        (
            {"mode": "eks", "cluster_name": "c", "region": "eu-west-1", "server": "https://k", "ca_data": "Q0E="},
            {},
            "gcf",
            ["aws", "cloudfunctions"],
        ),
        ({"mode": "kubeconfig"}, {"vigilmon": {"api_key": "gcpsm:projects/p/secrets/k"}}, "aws-x86_64", ["gcp"]),
        ({"mode": "gke", "server": "https://k", "ca_data": "Q0E="}, {}, "gcf", ["gcp", "cloudfunctions"]),
    ],
)
def test_required_extras_follow_auth_mode_secret_references_and_platform(
    auth: dict[str, object], references: dict[str, object], platform: str, extras: list[str]
) -> None:
    settings = parse_settings(
        {"environment": "e", "cluster": {"name": "c", "auth": auth}, **references, "checks": {"apiserver-health": {}}}
    )
    assert required_extras(settings, platform) == extras


@pytest.mark.parametrize(
    ("checks", "extras"),
    [
        ({"apiserver-health": {}, "apiserver-latency": {}, "apiserver-triage": {}}, []),
        ({"apiserver-cert-expiry": {}}, ["certificates"]),
        ({"webhook-cert-expiry": {}, "apiserver-cert-expiry": {}}, ["certificates"]),
        ({"webhook-cert-expiry": {"enabled": False}}, []),
    ],
)
def test_certificates_extra_only_when_a_certificate_check_is_enabled(
    checks: dict[str, object], extras: list[str]
) -> None:
    settings = parse_settings(
        {"environment": "e", "cluster": {"name": "c", "auth": {"mode": "kubeconfig"}}, "checks": checks}
    )
    assert required_extras(settings, "aws-arm64") == extras


def test_sandbox_operator_side_and_cloud_functions_server_are_refused_by_name() -> None:
    names = [
        "outpost/runner.py",
        "outpost/cli.py",
        "outpost/tooling/rbac.py",
        "outpost/sandbox/cluster.py",
        "outpost_sandbox/__init__.py",
        "outpost_sandbox-0.1.0.dist-info/METADATA",
        "flask/app.py",
        "werkzeug-3.1.9.dist-info/METADATA",
        "boto3/session.py",
    ]
    refused_everywhere = [
        "outpost/cli.py",
        "outpost/sandbox",
        "outpost/tooling",
        "outpost_sandbox",
        "outpost_sandbox-0.1.0.dist-info",
    ]
    assert forbidden_entries(names, "aws-arm64") == sorted(["flask", *refused_everywhere, "werkzeug-3.1.9.dist-info"])
    assert forbidden_entries(names, "gcf") == refused_everywhere
