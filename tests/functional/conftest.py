"""Real local servers for the functional tier: every seam is met over real HTTP on 127.0.0.1.

`receiver` records requests and answers from a script (a status, or "hang"); `moto_endpoint` is moto's server
mode, the SDK pointed at it by `AWS_ENDPOINT_URL`; `unreachable_cluster_config` is an environment whose API
server is a closed port (a real `error`), exported as OUTPOST_CONFIG; `gcp_secret_manager` speaks Secret
Manager's REST shape and an OAuth2 token endpoint, so google-auth's own refresh runs against it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_clock import FakeClock
from local_server import LocalServer, Recorded, Reply, free_port
from unreachable import HEARTBEAT_TOKEN, write_unreachable_config

from outpost import secrets
from outpost.secrets import crc32c
from outpost_sandbox.pki import LocalhostTls, localhost_tls
from outpost_sandbox.vigilmon import Vigilmon


@pytest.fixture(scope="module")
def pki(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> LocalhostTls:
    """A loopback CA and a serving certificate for 127.0.0.1/localhost, one per test module (named after it)."""
    return localhost_tls(tmp_path_factory.mktemp("pki"), request.module.__name__.removeprefix("test_"))


@pytest.fixture
def receiver() -> Iterator[LocalServer]:
    server = LocalServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def vigilmon(clock: FakeClock) -> Iterator[Vigilmon]:
    """The Vigilmon stand-in over real HTTP on loopback, on the test's `clock`."""
    with Vigilmon(clock=clock) as service:
        yield service


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    return free_port()


@pytest.fixture(autouse=True)
def _fresh_secret_cache() -> Iterator[None]:
    secrets.clear_cache()
    yield
    secrets.clear_cache()


@pytest.fixture
def unreachable_cluster_config(
    tmp_path: Path, closed_port: int, receiver: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> Path:
    path = write_unreachable_config(tmp_path / "test.yaml", closed_port)
    monkeypatch.setenv("OUTPOST_CONFIG", str(path))
    monkeypatch.setenv("OUTPOST_TEST_TOKEN", "sa-token-not-used-for-anything")
    monkeypatch.setenv("OUTPOST_TEST_HEARTBEAT", f"{receiver.base_url}/api/heartbeat/{HEARTBEAT_TOKEN}")
    return path


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    _warm_up(url)
    yield url
    server.stop()


def _warm_up(url: str) -> None:
    """One request per emulated service, so the emulator loads its backends before a test runs.

    The server runs in this process; its first SSM or Secrets Manager request imports and builds that
    backend, which on a busy 2-core machine takes longer than the short deadlines the fault matrix
    gives a whole check run. That start-up is the emulator's, not the code under test's.
    """
    import boto3

    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="eu-west-1"
    )
    session.client("ssm", endpoint_url=url).describe_parameters()
    session.client("secretsmanager", endpoint_url=url).list_secrets()


@pytest.fixture
def moto_endpoint(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return moto_server


@dataclass
class GcpSecretManager:
    server: LocalServer
    secrets: dict[str, bytes]
    access_token: str = "ya29.local-test-access-token"
    corrupt: bool = False

    def reply(self, request: Recorded) -> Reply:
        if request.path == "/token" and request.method == "POST":
            if b"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer" not in request.body:
                return 400, {"Content-Type": "application/json"}, b'{"error": "unsupported_grant_type"}'
            body = {"access_token": self.access_token, "expires_in": 3600, "token_type": "Bearer"}
            return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()
        if request.headers.get("Authorization") != f"Bearer {self.access_token}":
            error = {"error": {"code": 401, "message": "unauthenticated", "status": "UNAUTHENTICATED"}}
            return 401, {"Content-Type": "application/json"}, json.dumps(error).encode()
        name = request.path.removeprefix("/v1/").removesuffix(":access")
        if request.method != "GET" or not request.path.endswith(":access") or name not in self.secrets:
            error = {"error": {"code": 404, "message": f"Secret [{name}] not found", "status": "NOT_FOUND"}}
            return 404, {"Content-Type": "application/json"}, json.dumps(error).encode()
        data = self.secrets[name]
        checksum = crc32c(data) ^ (1 if self.corrupt else 0)
        payload = {"data": base64.b64encode(data).decode(), "dataCrc32c": str(checksum)}
        return 200, {"Content-Type": "application/json"}, json.dumps({"name": name, "payload": payload}).encode()


@pytest.fixture(scope="session")
def service_account_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@pytest.fixture
def gcp_secret_manager(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service_account_key_pem: str
) -> Iterator[GcpSecretManager]:
    """Secret Manager stand-in plus a service-account ADC file whose token_uri points at it.

    A service account (not an authorized_user file) because google-auth honours `token_uri` only there:
    the library signs a real JWT assertion with the throwaway key and exchanges it at our endpoint.
    """
    server = LocalServer()
    manager = GcpSecretManager(server=server, secrets={})
    server.responder = manager.reply
    server.start()
    adc = tmp_path / "adc.json"
    adc.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "outpost-test",
                "private_key_id": "local-test-key",
                "private_key": service_account_key_pem,
                "client_email": "probe@outpost-test.iam.gserviceaccount.com",
                "client_id": "1234567890",
                "token_uri": f"{server.base_url}/token",
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "outpost-test")
    monkeypatch.setenv("OUTPOST_GCPSM_ENDPOINT", server.base_url)
    yield manager
    server.stop()
