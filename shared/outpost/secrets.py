"""Secret references and their resolution: the only seam through which Outpost reads a secret store.

A value lives only in a `Secret` (redacted repr, explicit `reveal()`), is registered with `outpost.redaction`,
and never appears in an error; a reference's parse error does not even echo it, in case a URL was pasted there.
The SDK loggers are held at WARNING (botocore logs response bodies, i.e. secrets, at DEBUG). Values are cached
per process, failures are not; whitespace is stripped and an empty value is an error. Endpoints: the AWS SDK's
`AWS_ENDPOINT_URL*`, and `OUTPOST_GCPSM_ENDPOINT` for Google Secret Manager (tests point both at local servers).
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from outpost import redaction
from outpost.errors import SecretError

SCHEMES: Final = ("env", "ssm", "secretsmanager", "gcpsm")
GCPSM_ENDPOINT_ENV: Final = "OUTPOST_GCPSM_ENDPOINT"
GCPSM_DEFAULT_ENDPOINT: Final = "https://secretmanager.googleapis.com"
_GCP_SCOPES: Final = ("https://www.googleapis.com/auth/cloud-platform",)
_TIMEOUT_SECONDS: Final = 10.0
_lookup_timeout: contextvars.ContextVar[float | None] = contextvars.ContextVar("outpost_secret_timeout", default=None)


# Child loggers (botocore.parsers, botocore.endpoint) inherit this level unless set explicitly. "google", not
# "google.auth": google-auth turns propagation of the "google" logger off on its first request unless that logger
# is configured, which would drop its warnings and errors from the function's log without a trace.
for _name in ("botocore", "urllib3", "google"):
    if logging.getLogger(_name).level < logging.WARNING:
        logging.getLogger(_name).setLevel(logging.WARNING)


def register_secret_value(value: str) -> None:
    """Remember a value so every later output containing it is scrubbed (`outpost.redaction`'s registry)."""
    redaction.register(value)


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# SSM allows a-zA-Z0-9_.-/ in names; an ARN adds ':' (arn:aws:ssm:REGION:ACCOUNT:parameter/NAME).
_SSM_NAME = re.compile(r"^(/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*|arn:aws[a-z-]*:ssm:[a-z0-9-]+:\d{12}:parameter/.+)$")
_SM_NAME = re.compile(r"^[A-Za-z0-9/_+=.@\-:]+$")
_JSON_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")
_GCP_NAME = re.compile(
    r"^projects/(?P<project>[a-z0-9][a-z0-9-]*|\d+)/secrets/(?P<secret>[A-Za-z0-9_-]{1,255})"
    r"(/versions/(?P<version>latest|\d+))?$"
)


class Secret:
    """A secret value. It prints as `***`; only `reveal()` hands out the value."""

    __slots__ = ("__value",)

    def __init__(self, value: str) -> None:
        self.__value = value

    def reveal(self) -> str:
        """The value itself, for the one place that must send it (an HTTP request)."""
        return self.__value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __format__(self, format_spec: str) -> str:
        return "***"

    def __reduce__(self) -> NoReturn:
        # Pickling would write the value to wherever the pickle goes (a cache, a queue, a crash dump).
        raise TypeError("a Secret cannot be pickled")


@dataclass(frozen=True)
class SecretRef:
    """Where a secret lives: `scheme` and `name` (plus a JSON key for Secrets Manager). Not secret itself."""

    scheme: str
    name: str
    json_key: str | None = None

    def __str__(self) -> str:
        return f"{self.scheme}:{self.name}" + (f"#{self.json_key}" if self.json_key else "")


def parse_secret_ref(text: str) -> SecretRef:
    """Parse a reference; raises ValueError with a one-line reason that never echoes the text."""
    if not isinstance(text, str):
        raise ValueError("a secret reference must be a string such as env:NAME or ssm:/path")
    scheme, sep, name = text.strip().partition(":")
    if not sep or scheme not in SCHEMES:
        # Echo the scheme only when it looks like one: "https" here means a URL was pasted in.
        shown = f" {scheme!r}" if sep and scheme.isalpha() and len(scheme) < 20 else ""
        raise ValueError(
            f"unknown secret reference scheme{shown}: expected one of {', '.join(s + ':' for s in SCHEMES)}"
            " (the value itself never goes in the configuration)"
        )
    if not name:
        raise ValueError(f"{scheme}: reference has no name")
    if scheme == "env":
        if not _ENV_NAME.match(name):
            raise ValueError("env: reference is not a valid environment variable name")
        return SecretRef("env", name)
    if scheme == "ssm":
        if not _SSM_NAME.match(name):
            raise ValueError("ssm: reference is not a valid parameter name or ARN (letters, digits, _.-/)")
        return SecretRef("ssm", name)
    if scheme == "secretsmanager":
        secret_id, hash_sign, key = name.partition("#")
        if not secret_id or not _SM_NAME.match(secret_id):
            raise ValueError("secretsmanager: reference is not a valid secret name or ARN")
        if hash_sign and not _JSON_KEY.match(key):
            raise ValueError("secretsmanager: JSON key after '#' must be letters, digits, _.-")
        return SecretRef("secretsmanager", secret_id, key or None)
    match = _GCP_NAME.match(name)
    if not match:
        raise ValueError("gcpsm: reference must be projects/PROJECT/secrets/SECRET[/versions/VERSION|latest]")
    version = match.group("version") or "latest"
    project, secret = match.group("project"), match.group("secret")
    return SecretRef("gcpsm", f"projects/{project}/secrets/{secret}/versions/{version}")


class SecretResolver:
    """Resolves references against their stores and caches the values for the life of the process.

    `gcp_credentials` may be given explicitly; by default google-auth's application default credentials
    are used (the function's service account on GCF, GOOGLE_APPLICATION_CREDENTIALS elsewhere).
    """

    def __init__(self, gcp_credentials: Any = None) -> None:
        self._gcp_credentials = gcp_credentials
        self._cache: dict[SecretRef, Secret] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    def resolve(self, ref: str | SecretRef) -> Secret:
        if isinstance(ref, str):
            try:
                ref = parse_secret_ref(ref)
            except ValueError as error:
                raise SecretError(f"invalid secret reference: {error}") from None
        with self._lock:
            cached = self._cache.get(ref)
        if cached is not None:
            return cached
        raw = self._fetch(ref)
        value = raw.strip()
        if not value:
            raise SecretError(f"secret {ref}: value is empty")
        secret = Secret(value)
        register_secret_value(value)
        with self._lock:
            self._cache.setdefault(ref, secret)
            return self._cache[ref]

    def _fetch(self, ref: SecretRef) -> str:
        if ref.scheme == "env":
            value = os.environ.get(ref.name)
            if value is None:
                raise SecretError(f"secret {ref}: environment variable is not set")
            return value
        if ref.scheme == "ssm":
            return _fetch_ssm(ref)
        if ref.scheme == "secretsmanager":
            return _fetch_secretsmanager(ref)
        if ref.scheme == "gcpsm":
            return self._fetch_gcpsm(ref)
        raise SecretError(f"secret {ref}: unsupported scheme")

    def _fetch_gcpsm(self, ref: SecretRef) -> str:
        import google.auth
        import google.auth.exceptions
        import requests
        from google.auth.transport.requests import AuthorizedSession

        credentials = self._gcp_credentials
        try:
            if credentials is None:
                credentials, _project = google.auth.default(scopes=list(_GCP_SCOPES))
            session = AuthorizedSession(credentials)  # type: ignore[no-untyped-call]
            endpoint = os.environ.get(GCPSM_ENDPOINT_ENV, GCPSM_DEFAULT_ENDPOINT).rstrip("/")
            bound = _lookup_timeout.get()
            timeout = _TIMEOUT_SECONDS if bound is None else min(_TIMEOUT_SECONDS, bound)
            response = session.get(f"{endpoint}/v1/{ref.name}:access", timeout=timeout)
        except google.auth.exceptions.DefaultCredentialsError:
            raise SecretError(f"secret {ref}: no Google application default credentials") from None
        except google.auth.exceptions.GoogleAuthError as error:
            # The library's message can quote a token endpoint's response body: name the class only.
            raise SecretError(f"secret {ref}: Google credentials failed ({type(error).__name__})") from None
        except requests.Timeout:
            raise SecretError(f"secret {ref}: Secret Manager timed out") from None
        except requests.RequestException as error:
            raise SecretError(f"secret {ref}: Secret Manager unreachable ({type(error).__name__})") from None
        if response.status_code != 200:
            reason = _gcp_reason(response)
            raise SecretError(f"secret {ref}: Secret Manager answered HTTP {response.status_code}{reason}")
        try:
            payload = response.json()["payload"]
            data = base64.b64decode(payload["data"], validate=True)
            checksum = payload.get("dataCrc32c")
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise SecretError(f"secret {ref}: Secret Manager response is not an access payload") from None
        if checksum is not None and str(crc32c(data)) != str(checksum):
            raise SecretError(f"secret {ref}: payload checksum mismatch (corrupted in transit)")
        return _decode(ref, data)


def _gcp_reason(response: Any) -> str:
    # Google's error body carries a status word (NOT_FOUND, PERMISSION_DENIED) that names the cause.
    try:
        status = response.json()["error"]["status"]
    except (ValueError, KeyError, TypeError):
        return ""
    return f" ({status})" if isinstance(status, str) and status.isupper() else ""


def _aws_client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    bound = _lookup_timeout.get()
    if bound is None:
        config = Config(
            connect_timeout=5, read_timeout=_TIMEOUT_SECONDS, retries={"max_attempts": 3, "mode": "standard"}
        )
    else:
        config = Config(
            connect_timeout=min(5.0, bound),
            read_timeout=min(_TIMEOUT_SECONDS, bound),
            retries={"max_attempts": 1, "mode": "standard"},
        )
    return boto3.client(service, config=config)  # type: ignore[call-overload]


def _aws_call(ref: SecretRef, service: str, operation: str, **kwargs: Any) -> Any:
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

    try:
        client = _aws_client(service)
        return getattr(client, operation)(**kwargs)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "unknown")
        raise SecretError(f"secret {ref}: {service} {operation} failed ({code})") from None
    except NoCredentialsError:
        raise SecretError(f"secret {ref}: no AWS credentials") from None
    except NoRegionError:
        raise SecretError(f"secret {ref}: no AWS region (set AWS_REGION)") from None
    except BotoCoreError as error:
        raise SecretError(f"secret {ref}: {service} unreachable ({type(error).__name__})") from None


def _fetch_ssm(ref: SecretRef) -> str:
    response = _aws_call(ref, "ssm", "get_parameter", Name=ref.name, WithDecryption=True)
    try:
        value = response["Parameter"]["Value"]
    except (KeyError, TypeError):
        raise SecretError(f"secret {ref}: ssm response has no parameter value") from None
    if not isinstance(value, str):
        raise SecretError(f"secret {ref}: ssm parameter value is not a string")
    return value


def _fetch_secretsmanager(ref: SecretRef) -> str:
    response = _aws_call(ref, "secretsmanager", "get_secret_value", SecretId=ref.name)
    if isinstance(response.get("SecretString"), str):
        text = response["SecretString"]
    elif isinstance(response.get("SecretBinary"), bytes):
        text = _decode(ref, response["SecretBinary"])
    else:
        raise SecretError(f"secret {ref}: secretsmanager response has no secret value")
    if ref.json_key is None:
        return str(text)
    try:
        document = json.loads(text)
    except ValueError:
        raise SecretError(f"secret {ref}: secret is not JSON, but a JSON key was given") from None
    if not isinstance(document, dict) or ref.json_key not in document:
        raise SecretError(f"secret {ref}: JSON key {ref.json_key!r} not found")
    value = document[ref.json_key]
    if not isinstance(value, str):
        raise SecretError(f"secret {ref}: JSON key {ref.json_key!r} is not a string")
    return value


def _decode(ref: SecretRef, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SecretError(f"secret {ref}: value is not UTF-8 text") from None


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE: Final = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum Secret Manager sends as `payload.dataCrc32c`."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


_default_resolver = SecretResolver()


def resolve(ref: str | SecretRef, timeout: float | None = None) -> Secret:
    """Resolve a reference through the process-wide resolver (cached per cold start).

    `timeout` bounds a store lookup (one attempt, connect and read each capped at it): callers pass what
    is left of their deadline, so resolving a secret cannot push a run past the function's timeout.
    """
    marker = _lookup_timeout.set(None if timeout is None else max(0.1, timeout))
    try:
        return _default_resolver.resolve(ref)
    finally:
        _lookup_timeout.reset(marker)


def clear_cache() -> None:
    """Forget every cached value (tests, or a deliberate rotation)."""
    _default_resolver.clear()
