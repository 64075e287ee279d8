"""Secret resolution against real stores: the environment, moto's AWS emulator (server mode, over HTTP),
and a loopback server speaking Secret Manager's REST shape reached through google-auth's own session."""

from __future__ import annotations

import json
import logging
import pickle
import traceback

import boto3
import pytest

from outpost import secrets
from outpost.errors import SecretError
from outpost.logs import emit, install_redaction, redact
from outpost.secrets import Secret, SecretRef, parse_secret_ref, resolve

HEARTBEAT = "https://vigilmon.online/api/heartbeat/hb_5kQ9wX2mL7pR4tZ8"


def rendered(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


# --- references -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("env:OUTPOST_HB", SecretRef("env", "OUTPOST_HB")),
        ("ssm:/outpost/prod/heartbeat/apiserver-health", SecretRef("ssm", "/outpost/prod/heartbeat/apiserver-health")),
        ("ssm:plain-name", SecretRef("ssm", "plain-name")),
        ("secretsmanager:outpost/prod/vigilmon", SecretRef("secretsmanager", "outpost/prod/vigilmon")),
        (
            "secretsmanager:outpost/prod/vigilmon#api_key",
            SecretRef("secretsmanager", "outpost/prod/vigilmon", "api_key"),
        ),
        (
            "secretsmanager:arn:aws:secretsmanager:eu-west-1:123456789012:secret:outpost-AbCdEf#hb",
            SecretRef("secretsmanager", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:outpost-AbCdEf", "hb"),
        ),
        ("gcpsm:projects/p1/secrets/hb", SecretRef("gcpsm", "projects/p1/secrets/hb/versions/latest")),
        ("gcpsm:projects/p1/secrets/hb/versions/3", SecretRef("gcpsm", "projects/p1/secrets/hb/versions/3")),
    ],
)
def test_parse_valid_references(text: str, expected: SecretRef) -> None:
    assert parse_secret_ref(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (HEARTBEAT, "unknown secret reference scheme 'https'"),
        ("OUTPOST_HB", "unknown secret reference scheme"),
        ("vault:kv/x", "unknown secret reference scheme 'vault'"),
        ("env:", "env: reference has no name"),
        (f"env:{HEARTBEAT}", "env: reference is not a valid environment variable name"),
        ("ssm:/bad path", "ssm: reference is not a valid parameter name"),
        ("secretsmanager:name#", "secretsmanager: JSON key"),
        ("gcpsm:my-secret", "gcpsm: reference must be projects/"),
    ],
)
def test_parse_invalid_references_never_echo_the_text(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match="^" + reason.replace("(", r"\(")) as raised:
        parse_secret_ref(text)
    assert "hb_5kQ9" not in str(raised.value)
    assert "\n" not in str(raised.value)


# --- the Secret wrapper -----------------------------------------------------------------------------------


def test_secret_never_prints_its_value(capsys, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    secret = Secret(HEARTBEAT)
    logging.getLogger("test").info("secret is %s / %r / %s", secret, secret, f"{secret}")
    print(secret, repr(secret), [secret], {"k": secret})
    emit("INFO", "resolved", value=secret)
    out = capsys.readouterr().out
    assert "hb_5kQ9" not in out + caplog.text
    assert "***" in out
    assert secret.reveal() == HEARTBEAT
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(secret)


# --- env: -------------------------------------------------------------------------------------------------


def test_env_resolves_strips_and_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTPOST_TEST_HB", HEARTBEAT + "\n")
    first = resolve("env:OUTPOST_TEST_HB")
    assert first.reveal() == HEARTBEAT
    monkeypatch.setenv("OUTPOST_TEST_HB", "https://changed.example/rotated-value")
    assert resolve("env:OUTPOST_TEST_HB") is first  # cold-start cache: resolved once per process
    secrets.clear_cache()
    assert resolve("env:OUTPOST_TEST_HB").reveal() == "https://changed.example/rotated-value"


def test_resolved_values_are_scrubbed_from_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTPOST_TEST_KEY", "plainkeywithoutanydigits")
    resolve("env:OUTPOST_TEST_KEY")
    assert redact("oops: plainkeywithoutanydigits leaked") == "oops: *** leaked"


@pytest.mark.parametrize(("value", "reason"), [(None, "environment variable is not set"), ("  \n", "value is empty")])
def test_env_missing_or_empty(monkeypatch: pytest.MonkeyPatch, value: str | None, reason: str) -> None:
    if value is None:
        monkeypatch.delenv("OUTPOST_TEST_MISSING", raising=False)
    else:
        monkeypatch.setenv("OUTPOST_TEST_MISSING", value)
    with pytest.raises(SecretError, match=f"^secret env:OUTPOST_TEST_MISSING: {reason}$"):
        resolve("env:OUTPOST_TEST_MISSING")


def test_invalid_reference_is_a_secret_error() -> None:
    with pytest.raises(SecretError, match=r"^invalid secret reference: unknown secret reference scheme 'https'"):
        resolve(HEARTBEAT)


# --- ssm: and secretsmanager: against moto's server ---------------------------------------------------------


def test_ssm_secure_string(moto_endpoint: str) -> None:
    ssm = boto3.client("ssm")
    ssm.put_parameter(Name="/outpost/test/heartbeat/apiserver-health", Value=HEARTBEAT, Type="SecureString")
    secret = resolve("ssm:/outpost/test/heartbeat/apiserver-health")
    assert secret.reveal() == HEARTBEAT


def test_ssm_missing_parameter_names_reference_and_cause(moto_endpoint: str) -> None:
    with pytest.raises(SecretError) as raised:
        resolve("ssm:/outpost/test/does-not-exist")
    assert str(raised.value) == (
        "secret ssm:/outpost/test/does-not-exist: ssm get_parameter failed (ParameterNotFound)"
    )


def test_secretsmanager_string_and_json_key(moto_endpoint: str) -> None:
    client = boto3.client("secretsmanager")
    client.create_secret(Name="outpost/test/heartbeat", SecretString=HEARTBEAT)
    client.create_secret(
        Name="outpost/test/vigilmon", SecretString=json.dumps({"api_key": "vk_live_0a1b2c3d4e5f", "n": 3})
    )
    assert resolve("secretsmanager:outpost/test/heartbeat").reveal() == HEARTBEAT
    assert resolve("secretsmanager:outpost/test/vigilmon#api_key").reveal() == "vk_live_0a1b2c3d4e5f"
    with pytest.raises(SecretError, match=r"JSON key 'missing' not found$"):
        resolve("secretsmanager:outpost/test/vigilmon#missing")
    with pytest.raises(SecretError, match=r"JSON key 'n' is not a string$"):
        resolve("secretsmanager:outpost/test/vigilmon#n")
    with pytest.raises(SecretError) as raised:
        resolve("secretsmanager:outpost/test/heartbeat#api_key")
    assert str(raised.value) == (
        "secret secretsmanager:outpost/test/heartbeat#api_key: secret is not JSON, but a JSON key was given"
    )
    assert "hb_5kQ9" not in rendered(raised.value)


def test_secretsmanager_missing(moto_endpoint: str) -> None:
    with pytest.raises(
        SecretError,
        match=r"^secret secretsmanager:outpost/test/nope: secretsmanager "
        r"get_secret_value failed \(ResourceNotFoundException\)$",
    ):
        resolve("secretsmanager:outpost/test/nope")


def test_aws_store_unreachable(moto_endpoint: str, closed_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port}")
    with pytest.raises(SecretError, match=r"^secret ssm:/outpost/x: ssm unreachable \(EndpointConnectionError\)$"):
        resolve("ssm:/outpost/x")


# --- gcpsm: against a loopback Secret Manager REST server, via google-auth -----------------------------------


def test_gcpsm_access_with_google_auth_refresh(gcp_secret_manager) -> None:  # type: ignore[no-untyped-def]
    gcp_secret_manager.secrets["projects/outpost-test/secrets/hb/versions/latest"] = (HEARTBEAT + "\n").encode()
    assert resolve("gcpsm:projects/outpost-test/secrets/hb").reveal() == HEARTBEAT
    paths = [(r.method, r.path) for r in gcp_secret_manager.server.requests]
    # google-auth refreshed its token at our token_uri, then sent it as a bearer to the access call.
    assert paths == [("POST", "/token"), ("GET", "/v1/projects/outpost-test/secrets/hb/versions/latest:access")]


def test_google_auth_warnings_still_reach_the_log_after_its_first_request(gcp_secret_manager) -> None:  # type: ignore[no-untyped-def]
    """google-auth turns propagation of the "google" logger off on its first request unless that logger is
    configured; Outpost configures it, so what google-auth warns about still reaches the function's log (scrubbed,
    as the runner installs redaction)."""
    install_redaction()
    gcp_secret_manager.secrets["projects/outpost-test/secrets/hb/versions/latest"] = HEARTBEAT.encode()
    assert resolve("gcpsm:projects/outpost-test/secrets/hb").reveal() == HEARTBEAT
    seen: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Collect()
    logging.getLogger().addHandler(handler)
    try:
        logging.getLogger("google.auth.transport.requests").warning("refresh failed for %s", HEARTBEAT)
    finally:
        logging.getLogger().removeHandler(handler)
    assert logging.getLogger("google").propagate
    assert [record.getMessage() for record in seen] == ["refresh failed for ***"]


def test_gcpsm_not_found(gcp_secret_manager) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SecretError) as raised:
        resolve("gcpsm:projects/outpost-test/secrets/nope/versions/2")
    assert str(raised.value) == (
        "secret gcpsm:projects/outpost-test/secrets/nope/versions/2: Secret Manager answered HTTP 404 (NOT_FOUND)"
    )


def test_gcpsm_checksum_mismatch(gcp_secret_manager) -> None:  # type: ignore[no-untyped-def]
    gcp_secret_manager.secrets["projects/outpost-test/secrets/hb/versions/latest"] = HEARTBEAT.encode()
    gcp_secret_manager.corrupt = True
    with pytest.raises(SecretError, match="payload checksum mismatch") as raised:
        resolve("gcpsm:projects/outpost-test/secrets/hb")
    assert "hb_5kQ9" not in rendered(raised.value)


def test_gcpsm_unreachable(gcp_secret_manager, closed_port: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OUTPOST_GCPSM_ENDPOINT", f"http://127.0.0.1:{closed_port}")
    with pytest.raises(SecretError, match=r"Secret Manager unreachable \(ConnectionError\)$"):
        resolve("gcpsm:projects/outpost-test/secrets/hb")


def test_gcpsm_without_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "absent.json"))
    with pytest.raises(SecretError, match=r"no Google application default credentials$"):
        resolve("gcpsm:projects/outpost-test/secrets/hb")


def test_crc32c_known_vector() -> None:
    # RFC 3720 B.4 test vector: 32 bytes of zeros.
    assert secrets.crc32c(bytes(32)) == 0x8A9136AA
    assert secrets.crc32c(b"123456789") == 0xE3069283
