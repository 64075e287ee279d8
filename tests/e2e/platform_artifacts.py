"""The built artifacts run as their platforms run them, for tests/e2e/test_platform_artifacts_e2e.py.

- Lambda: the zip `outpost package` wrote, unpacked as the task root, run by AWS's runtime interface client
  (awslambdaric, from tests/e2e/requirements-lambda-runtime.txt, in a clean virtualenv: `python -m awslambdaric
  HANDLER` in the task root, as AWS documents for a Python runtime) behind the Lambda Runtime Interface
  Emulator (`infra/sandbox/go/build.sh rie`), which serves the invoke API and forwards its own environment to the
  function. The handler, timeout, memory and environment are read from what Serverless deploys: the build's
  `deployment.json` (functions, function names, region, runtime) and serverless.yml's `provider` section.
- Cloud Functions: the source zip, unpacked, its own requirements.txt installed into a clean virtualenv (hashes
  required), served by that virtualenv's `functions-framework --target ENTRY_POINT --signature-type http
  --source main.py` in the source root, with the environment variables infra/gcp gives each function
  (`service_config.environment_variables`, resolved from the build's terraform.tfvars.json).
- `GoogleStandIn`: the parts of Google the function reaches, on loopback: the metadata server (Application
  Default Credentials on Cloud Functions come from it; google-auth finds it through `GCE_METADATA_HOST` and
  `GCE_METADATA_IP`) and Secret Manager's `versions/V:access` (through `OUTPOST_GCPSM_ENDPOINT`).

Every process is started with an environment built here from nothing (PATH alone is inherited), so nothing of the
test's interpreter (its PYTHONPATH, its virtualenv) reaches the function.
"""

from __future__ import annotations

import base64
import fcntl
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hcl2
import httpx
import yaml

from kit.bundles import REPO
from outpost.secrets import crc32c
from outpost_sandbox.binaries import cache_root

LAMBDA_RUNTIME_REQUIREMENTS = Path(__file__).resolve().with_name("requirements-lambda-runtime.txt")
BUILD_SCRIPT = REPO / "infra" / "sandbox" / "go" / "build.sh"
INVOKE_PATH = "/2015-03-31/functions/function/invocations"
START_SECONDS = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def emulator() -> Path:
    """The Lambda Runtime Interface Emulator built from its pinned Go module (build.sh rie: seconds, then cached),
    under the lock the sandbox's own build takes, so the two never build at once."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with (root / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        process = subprocess.run([str(BUILD_SCRIPT), "rie"], capture_output=True, text=True, timeout=900, check=False)
    assert process.returncode == 0, f"{BUILD_SCRIPT} rie exited {process.returncode}: {process.stderr[-3000:]}"
    path = Path(process.stdout.strip().splitlines()[-1])
    assert os.access(path, os.X_OK), path
    return path


def project(tmp: Path, environment: Mapping[str, Any]) -> Path:
    """A project tree `outpost package --root` builds from: this checkout's sources, pyproject.toml, locks and entry
    modules, and the one environment file given."""
    root = tmp / "project"
    shutil.copytree(REPO / "functions", root / "functions", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        REPO / "shared" / "outpost", root / "shared" / "outpost", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(REPO / "infra" / "locks", root / "infra" / "locks")
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "infra" / "environments").mkdir(parents=True)
    (root / "infra" / "environments" / f"{environment['environment']}.yaml").write_text(
        yaml.safe_dump(dict(environment))
    )
    return root


def ca_data(ca_path: Path) -> str:
    """A CA file as a kubeconfig carries it (base64 of the PEM): what a deployed environment file holds."""
    return base64.b64encode(ca_path.read_bytes()).decode()


def _base_environment() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"exited {process.returncode} before listening: {log.read_text()[-3000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"not listening on {port} after {START_SECONDS} s: {log.read_text()[-3000:]}")


@contextmanager
def _running(command: list[str], cwd: Path, environment: Mapping[str, str], port: int, log: Path) -> Iterator[None]:
    with log.open("wb") as output:
        process = subprocess.Popen(command, cwd=cwd, env=dict(environment), stdout=output, stderr=subprocess.STDOUT)
    try:
        _wait_for_port(port, process, log)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


# --- AWS Lambda ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LambdaFunction:
    """One function as serverless.yml deploys it from a build."""

    name: str
    handler: str
    runtime: str
    region: str
    timeout: int
    memory: int
    environment: dict[str, str]

    def variables(self) -> dict[str, str]:
        """What Lambda puts in the function's environment (the emulator adds its runtime API and credentials)."""
        return {
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(self.timeout),
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.memory),
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{self.runtime}",
            "TZ": ":UTC",
            **self.environment,
        }


def lambda_function(stage: Path, check: str) -> LambdaFunction:
    """The function of `check` in the build at `stage`: deployment.json's Serverless sections and serverless.yml's
    provider (its `${sls:stage}` is the environment; any other variable there would need Serverless itself)."""
    deployment = json.loads((stage / "deployment.json").read_text())
    serverless = deployment["serverless"]
    provider = yaml.safe_load((REPO / "serverless.yml").read_text())["provider"]
    function = serverless["functions"][check]
    environment = {}
    for name, value in {**provider.get("environment", {}), **function.get("environment", {})}.items():
        resolved = str(value).replace("${sls:stage}", deployment["environment"])
        assert "${" not in resolved, f"serverless.yml environment {name}: unresolved {resolved!r}"
        environment[name] = resolved
    return LambdaFunction(
        name=serverless["functionNames"][check],
        handler=function["handler"],
        runtime=serverless["runtime"],
        region=serverless["region"],
        timeout=int(function.get("timeout", provider.get("timeout", 6))),
        memory=int(function.get("memorySize", provider["memorySize"])),
        environment=environment,
    )


@dataclass(frozen=True)
class Invocation:
    """One answer of the emulator's invoke API: its HTTP status and the function's payload (or error document)."""

    status: int
    payload: Any

    @property
    def error_type(self) -> str | None:
        """The failed invocation's `errorType` (the emulator does not set X-Amz-Function-Error; the body says it)."""
        if isinstance(self.payload, dict) and "errorType" in self.payload and "errorMessage" in self.payload:
            return str(self.payload["errorType"])
        return None


@dataclass
class EmulatedLambda:
    url: str
    log: Path

    def invoke(self, event: Any, timeout: float = 120) -> Invocation:
        response = httpx.post(self.url, content=json.dumps(event), timeout=timeout)
        return Invocation(response.status_code, response.json())


@contextmanager
def emulated_lambda(
    rie: Path, python: Path, task_root: Path, function: LambdaFunction, seams: Mapping[str, str], log: Path
) -> Iterator[EmulatedLambda]:
    """`aws-lambda-rie <python> -m awslambdaric HANDLER` in the task root; `seams` are the test's endpoints and
    throwaway credentials (the emulator hands AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY to the function as Lambda
    hands it the role's)."""
    port, runtime_api = free_port(), free_port()
    environment = {**_base_environment(), "LAMBDA_TASK_ROOT": str(task_root), **function.variables(), **seams}
    command = [
        str(rie),
        "--runtime-interface-emulator-address",
        f"127.0.0.1:{port}",
        "--runtime-api-address",
        f"127.0.0.1:{runtime_api}",
        str(python),
        "-m",
        "awslambdaric",
        function.handler,
    ]
    with _running(command, task_root, environment, port, log):
        yield EmulatedLambda(f"http://127.0.0.1:{port}{INVOKE_PATH}", log)


# --- Google Cloud Functions ---------------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$\{(var\.[a-z_]+|each\.key)\}")


def cloud_function_environment(stage: Path, check: str) -> tuple[str, dict[str, str]]:
    """(entry point, environment variables) infra/gcp gives `check`'s function, resolved from the build's
    terraform.tfvars.json (`var.*`) and the check's name (`each.key`)."""
    variables = json.loads((stage / "terraform.tfvars.json").read_text())
    assert check in variables["checks"], sorted(variables["checks"])
    with (REPO / "infra" / "gcp" / "main.tf").open() as source:
        terraform = hcl2.load(source)
    functions = [
        body
        for resource in terraform["resource"]
        for kind, named in resource.items()
        if kind.strip('"') == "google_cloudfunctions2_function"  # python-hcl2 7 keeps labels' quotes
        for name, body in named.items()
        if name.strip('"') == "check"  # the checks' functions; "inhibitor" is the hold-back function
    ]
    assert len(functions) == 1, functions
    (service,) = functions[0]["service_config"]
    (build,) = functions[0]["build_config"]
    declared = service["environment_variables"]
    if isinstance(declared, str):
        # merge({...}, local.inhibitor_url): the map every check gets, plus the inhibitor's URI where infra/gcp
        # deploys one. A check served here has no inhibitor to call, so it holds nothing back (its cold start says so).
        merged = re.fullmatch(r"\$\{merge\(\{(.*)\}, local\.inhibitor_url\)\}", declared, re.S)
        assert merged, f"infra/gcp: unexpected environment_variables {declared!r}"
        pairs = [pair.split("=", 1) for pair in merged.group(1).split(",")]
        declared = {key.strip(): "${" + value.strip() + "}" for key, value in pairs}

    def resolve(text: Any) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            return check if name == "each.key" else str(variables[name.removeprefix("var.")])

        literal = str(text)
        if len(literal) >= 2 and literal[0] == literal[-1] == '"':  # a quoted literal, as python-hcl2 7 gives it
            literal = literal[1:-1]
        resolved = _VARIABLE.sub(value, literal)
        assert "${" not in resolved, f"infra/gcp: unresolved {resolved!r}"
        return resolved

    environment = {name: resolve(value) for name, value in declared.items()}
    return resolve(build["entry_point"]), environment


@contextmanager
def served_cloud_function(
    venv: Path,
    source: Path,
    entry_point: str,
    function_name: str,
    environment: Mapping[str, str],
    seams: Mapping[str, str],
    log: Path,
) -> Iterator[str]:
    """`functions-framework --target ENTRY_POINT --signature-type http --source main.py` in the source root, as the
    Python runtime starts it (production server, PORT and the K_* variables set); yields its URL."""
    port = free_port()
    variables = {
        **_base_environment(),
        "PORT": str(port),
        "K_SERVICE": function_name,
        "K_REVISION": f"{function_name}-00001-e2e",
        "K_CONFIGURATION": function_name,
        "FUNCTION_TARGET": entry_point,
        "FUNCTION_SIGNATURE_TYPE": "http",
        **environment,
        **seams,
    }
    command = [
        str(venv / "bin" / "functions-framework"),
        "--target",
        entry_point,
        "--signature-type",
        "http",
        "--source",
        "main.py",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with _running(command, source, variables, port, log):
        yield f"http://127.0.0.1:{port}/"


@dataclass
class GoogleStandIn:
    """Google's metadata server (the function's service account token) and Secret Manager, on one loopback port.

    Secret Manager answers only with the metadata server's token; the metadata server only to `Metadata-Flavor:
    Google`, as the real ones do. Secrets are `{projects/P/secrets/S: value}`; `latest` is the only version.
    """

    secrets: dict[str, str] = field(default_factory=dict)
    project: str = "outpost-e2e"
    access_token: str = "ya29.e2e-local-access-token"
    accesses: list[str] = field(default_factory=list)
    _server: http.server.ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def seams(self) -> dict[str, str]:
        """The variables that point google-auth and outpost.secrets here instead of at Google."""
        host = self.base_url.removeprefix("http://")
        return {"GCE_METADATA_HOST": host, "GCE_METADATA_IP": host, "OUTPOST_GCPSM_ENDPOINT": self.base_url}

    def answer(self, method: str, path: str, headers: Mapping[str, str]) -> tuple[int, str, str]:
        """(status, content type, body) for one request (`headers` by lower-case name)."""
        bare = path.split("?", 1)[0]
        if bare.startswith("/v1/"):
            return self._secret_manager(method, bare, headers)
        if headers.get("metadata-flavor") != "Google":
            return 403, "text/plain", "Missing Metadata-Flavor header"
        account = "/computeMetadata/v1/instance/service-accounts/default"
        email = f"outpost-e2e@{self.project}.iam.gserviceaccount.com"
        if bare == "/":
            return 200, "application/text", "computeMetadata/"
        if bare == "/computeMetadata/v1/project/project-id":
            return 200, "application/text", self.project
        if bare == "/computeMetadata/v1/universe/universe-domain":
            return 200, "application/text", "googleapis.com"
        if bare == f"{account}/token":
            token = {"access_token": self.access_token, "expires_in": 3599, "token_type": "Bearer"}
            return 200, "application/json", json.dumps(token)
        if bare == f"{account}/email":
            return 200, "application/text", email
        if bare == f"{account}/":
            info = {
                "aliases": ["default"],
                "email": email,
                "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
            }
            return 200, "application/json", json.dumps(info)
        return 404, "text/plain", "not found"

    def _secret_manager(self, method: str, path: str, headers: Mapping[str, str]) -> tuple[int, str, str]:
        if headers.get("authorization") != f"Bearer {self.access_token}":
            error = {"error": {"code": 401, "message": "unauthenticated", "status": "UNAUTHENTICATED"}}
            return 401, "application/json", json.dumps(error)
        name = path.removeprefix("/v1/").removesuffix(":access")
        secret = name.removesuffix("/versions/latest")
        if method != "GET" or not path.endswith(":access") or secret not in self.secrets:
            error = {"error": {"code": 404, "message": f"Secret [{name}] not found", "status": "NOT_FOUND"}}
            return 404, "application/json", json.dumps(error)
        self.accesses.append(secret)
        data = self.secrets[secret].encode()
        payload = {"data": base64.b64encode(data).decode(), "dataCrc32c": str(crc32c(data))}
        return 200, "application/json", json.dumps({"name": name, "payload": payload})

    def __enter__(self) -> GoogleStandIn:
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                headers = {name.lower(): value for name, value in self.headers.items()}
                status, kind, body = stand_in.answer("GET", self.path, headers)
                encoded = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Metadata-Flavor", "Google")
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
