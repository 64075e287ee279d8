"""The built artifacts, run as their platforms run them, against the sandbox as the cluster.

Lambda: `outpost package` builds a deployable AWS environment (token auth, every secret in SSM); its zip, unpacked,
runs under AWS's runtime interface client (awslambdaric, in a clean virtualenv) behind the Lambda Runtime
Interface Emulator, with the handler, timeout, memory and environment Serverless deploys (deployment.json and
serverless.yml), the secrets in a local moto server. Cloud Functions: the source zip of a deployable Google
environment (every secret in Secret Manager), installed from its own requirements.txt into a clean virtualenv
and served by functions-framework with the environment infra/gcp gives it, its credentials and secrets from
loopback stand-ins for the metadata server and Secret Manager. Each test is a cold start of its own.

On both: healthy (be-eviction-rate, no eviction) -> the run returns ok and pings once; broken (the sandbox's
`be-evictions` fault: 10 evictPodSuccess Events, the API server untouched) -> the invocation fails (Lambda:
`errorType` CheckUnhealthy in the emulator's answer, which sets no X-Amz-Function-Error; Cloud Functions: 503)
and nothing pings; a malformed request -> 400 (Lambda: the Function URL's statusCode; an event of no known shape
fails the invocation with InvocationError) and nothing pings.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import httpx
import pytest
from platform_artifacts import (
    LAMBDA_RUNTIME_REQUIREMENTS,
    EmulatedLambda,
    GoogleStandIn,
    ca_data,
    cloud_function_environment,
    emulated_lambda,
    emulator,
    free_port,
    lambda_function,
    project,
    served_cloud_function,
)

from kit.bundles import Built, clean_venv, distribution_versions, package, unpack
from outpost.tooling.packaging.platforms import host_architecture
from outpost_sandbox import faults
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver
from samples.aws_events import FUNCTION_URL_EVENT, SCHEDULED_EVENT

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "be-eviction-rate"
FAULT = "be-evictions"
AWS_ENVIRONMENT = "e2e-aws"
GCP_ENVIRONMENT = "e2e-gcp"
GCP_PROJECT = "outpost-e2e"
REGION = "eu-west-1"
THROWAWAY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
SSM_TOKEN, SSM_HEARTBEAT = f"/outpost/{AWS_ENVIRONMENT}/token", f"/outpost/{AWS_ENVIRONMENT}/hb/{CHECK}"
"""The SSM parameters the AWS environment names and `lambda_running` stores."""
GCP_TOKEN, GCP_HEARTBEAT = f"projects/{GCP_PROJECT}/secrets/token", f"projects/{GCP_PROJECT}/secrets/heartbeat"
"""The Secret Manager secrets the Google environment names and `google` serves."""


def environment(name: str, sandbox: SandboxInfo, deploy: dict[str, str], token: str, heartbeat: str) -> dict[str, Any]:
    """A deployable environment with one check, the sandbox as its cluster (its serving CA, the probe's token)."""
    return {
        "environment": name,
        "deploy": deploy,
        "cluster": {
            "name": "sandbox",
            "auth": {"mode": "token", "server": sandbox.server, "token": token, "ca_data": ca_data(sandbox.ca_path)},
            "deadline_seconds": 20,
        },
        "heartbeat": {"timeout_seconds": 5, "retries": 0},
        "vigilmon": {"channels": {"page": ["pagerduty"], "notify": ["slack"]}},
        "checks": {CHECK: {"heartbeat": heartbeat, "monitor_id": "1"}},
    }


@pytest.fixture
def broken(sandbox: SandboxInfo) -> Iterator[None]:
    """The `be-evictions` fault for the length of one test, healed in teardown whatever happens."""
    faults.break_fault(FAULT, state_dir=sandbox.state_dir)
    try:
        yield
    finally:
        faults.heal(FAULT, state_dir=sandbox.state_dir)


# --- AWS Lambda ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LambdaBuild:
    built: Built
    task_root: Path


@pytest.fixture(scope="module")
def lambda_build(sandbox: SandboxInfo, tmp_path_factory: pytest.TempPathFactory) -> LambdaBuild:
    tmp = tmp_path_factory.mktemp("lambda")
    deploy = {"platform": "aws", "region": REGION, "architecture": host_architecture()}
    root = project(tmp, environment(AWS_ENVIRONMENT, sandbox, deploy, f"ssm:{SSM_TOKEN}", f"ssm:{SSM_HEARTBEAT}"))
    built = package(sys.executable, AWS_ENVIRONMENT, tmp / "build", root=root, platform=f"aws-{host_architecture()}")
    return LambdaBuild(built, unpack(built.artifact, tmp / "task"))


@pytest.fixture(scope="module")
def lambda_runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean virtualenv holding awslambdaric alone (what the Lambda Python runtime runs the handler with)."""
    return clean_venv(tmp_path_factory.mktemp("awslambdaric") / "venv", LAMBDA_RUNTIME_REQUIREMENTS)


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def lambda_running(
    lambda_build: LambdaBuild,
    lambda_runtime: Path,
    moto_server: str,
    receiver: HeartbeatReceiver,
    sandbox: SandboxInfo,
    tmp_path: Path,
) -> Iterator[EmulatedLambda]:
    """The function, cold, behind the emulator; its token and this test's heartbeat URL stored in SSM."""
    ssm = boto3.client(
        "ssm",
        endpoint_url=moto_server,
        region_name=REGION,
        aws_access_key_id=THROWAWAY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=THROWAWAY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    for name, value in ((SSM_TOKEN, sandbox.probe_token), (SSM_HEARTBEAT, receiver.url_for(CHECK))):
        ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)
    function = lambda_function(lambda_build.built.stage, CHECK)
    seams = {"AWS_ENDPOINT_URL": moto_server, **THROWAWAY_CREDENTIALS}
    with emulated_lambda(
        emulator(), lambda_runtime, lambda_build.task_root, function, seams, tmp_path / "lambda.log"
    ) as running:
        yield running


def test_lambda_function_is_what_serverless_deploys(lambda_build: LambdaBuild, lambda_runtime: Path) -> None:
    function = lambda_function(lambda_build.built.stage, CHECK)
    # The runtime's environment holds the runtime interface client alone: the product and its dependencies can only
    # come from the task root, as on Lambda.
    installed = set(distribution_versions(lambda_runtime)) - {"pip", "setuptools"}
    assert installed == {"awslambdaric", "simplejson", "snapshot-restore-py"}, sorted(installed)
    assert function.handler == "functions/be_eviction_rate/main.handler"
    assert function.environment == {"OUTPOST_CONFIG": f"infra/environments/{AWS_ENVIRONMENT}.yaml"}
    assert function.name == f"outpost-{AWS_ENVIRONMENT}-{CHECK}"
    assert function.runtime == "python3.11"
    assert (lambda_build.task_root / function.environment["OUTPOST_CONFIG"]).is_file()
    assert (lambda_build.task_root / "functions" / "be_eviction_rate" / "main.py").is_file()


def test_lambda_healthy_run_returns_and_pings_once(lambda_running: EmulatedLambda, receiver: HeartbeatReceiver) -> None:
    answer = lambda_running.invoke(SCHEDULED_EVENT)
    assert answer.error_type is None, (answer.payload, lambda_running.log.read_text()[-3000:])
    assert answer.status == 200
    assert (answer.payload["check"], answer.payload["status"]) == (CHECK, "ok"), answer.payload
    assert answer.payload["reported"] is True
    assert receiver.pings_for(CHECK) == 1


def test_lambda_broken_run_fails_the_invocation_and_never_pings(
    broken: None, lambda_running: EmulatedLambda, receiver: HeartbeatReceiver
) -> None:
    answer = lambda_running.invoke(SCHEDULED_EVENT)
    assert answer.error_type == "CheckUnhealthy", (answer.payload, lambda_running.log.read_text()[-3000:])
    assert answer.payload["errorMessage"].startswith(f"{CHECK} failed: BE pods: observed 10 evictPodSuccess")
    assert receiver.pings_for(CHECK) == 0


def test_lambda_bad_event_is_refused_and_never_pings(
    lambda_running: EmulatedLambda, receiver: HeartbeatReceiver
) -> None:
    bad_request = copy.deepcopy(FUNCTION_URL_EVENT)
    bad_request["rawQueryString"] = "report=maybe"
    answer = lambda_running.invoke(bad_request)
    assert answer.error_type is None, answer.payload
    assert answer.payload["statusCode"] == 400, answer.payload
    assert "report" in json.loads(answer.payload["body"])["error"]
    unknown = lambda_running.invoke({"hello": "world"})
    assert unknown.error_type == "InvocationError", unknown.payload
    assert unknown.payload["errorMessage"].startswith("unrecognised event"), unknown.payload
    assert receiver.pings_for(CHECK) == 0


# --- Google Cloud Functions ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CloudFunctionsBuild:
    built: Built
    source: Path
    venv: Path


@pytest.fixture(scope="module")
def gcp_build(sandbox: SandboxInfo, tmp_path_factory: pytest.TempPathFactory) -> CloudFunctionsBuild:
    """The Cloud Functions source and a clean virtualenv holding exactly its requirements.txt (hashes required)."""
    tmp = tmp_path_factory.mktemp("gcf")
    deploy = {"platform": "gcf", "region": "europe-west1", "project": GCP_PROJECT}
    doc = environment(GCP_ENVIRONMENT, sandbox, deploy, f"gcpsm:{GCP_TOKEN}", f"gcpsm:{GCP_HEARTBEAT}")
    built = package(sys.executable, GCP_ENVIRONMENT, tmp / "build", root=project(tmp, doc), platform="gcp")
    source = unpack(built.artifact, tmp / "source")
    clean_venv(tmp / "venv", source / "requirements.txt")
    return CloudFunctionsBuild(built, source, tmp / "venv")


@pytest.fixture
def google(sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> Iterator[GoogleStandIn]:
    secrets = {GCP_TOKEN: sandbox.probe_token, GCP_HEARTBEAT: receiver.url_for(CHECK)}
    with GoogleStandIn(secrets=secrets, project=GCP_PROJECT) as stand_in:
        yield stand_in


@pytest.fixture
def cloud_function(gcp_build: CloudFunctionsBuild, google: GoogleStandIn, tmp_path: Path) -> Iterator[str]:
    """The function, cold, served as the Python runtime serves it; its URL."""
    entry_point, variables = cloud_function_environment(gcp_build.built.stage, CHECK)
    tfvars = json.loads((gcp_build.built.stage / "terraform.tfvars.json").read_text())
    name = tfvars["checks"][CHECK]["function_name"]
    with served_cloud_function(
        gcp_build.venv, gcp_build.source, entry_point, name, variables, google.seams(), tmp_path / "gcf.log"
    ) as url:
        yield url


def invoked(url: str, status: int, log: Path) -> Any:
    """The function's JSON answer to a POST with no body, which must come with `status` (else the answer and the
    tail of the function's log)."""
    response = httpx.post(url, timeout=120)
    assert response.status_code == status, (response.text, log.read_text()[-3000:])
    return response.json()


def test_cloud_function_is_what_terraform_deploys(gcp_build: CloudFunctionsBuild) -> None:
    entry_point, variables = cloud_function_environment(gcp_build.built.stage, CHECK)
    assert entry_point == "http"
    assert variables == {"OUTPOST_CONFIG": f"infra/environments/{GCP_ENVIRONMENT}.yaml", "OUTPOST_CHECK": CHECK}
    assert (gcp_build.source / variables["OUTPOST_CONFIG"]).is_file()
    assert (gcp_build.venv / "bin" / "functions-framework").is_file()
    assert not list(gcp_build.venv.glob("lib/python*/site-packages/outpost")), "the product must come from the source"


def test_cloud_function_healthy_run_answers_200_and_pings_once(
    cloud_function: str, receiver: HeartbeatReceiver, google: GoogleStandIn, tmp_path: Path
) -> None:
    body = invoked(cloud_function, 200, tmp_path / "gcf.log")
    assert (body["check"], body["status"], body["reported"]) == (CHECK, "ok", True), body
    assert receiver.pings_for(CHECK) == 1
    assert set(google.accesses) == set(google.secrets)  # both secrets came from Secret Manager, as deployed


def test_cloud_function_broken_run_answers_503_and_never_pings(
    broken: None, cloud_function: str, receiver: HeartbeatReceiver, tmp_path: Path
) -> None:
    body = invoked(cloud_function, 503, tmp_path / "gcf.log")
    assert (body["status"], body["reported"]) == ("failed", False), body
    assert body["summary"].startswith("BE pods: observed 10 evictPodSuccess"), body
    assert receiver.pings_for(CHECK) == 0


def test_cloud_function_bad_request_answers_400_and_never_pings(
    cloud_function: str, receiver: HeartbeatReceiver
) -> None:
    response = httpx.post(cloud_function, json={"report": "maybe"}, timeout=120)
    assert response.status_code == 400, response.text
    assert "report" in response.json()["error"]
    assert receiver.pings_for(CHECK) == 0
