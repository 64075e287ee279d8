"""The notifier's function: `make_notifier_handler()` (AWS Lambda) and `make_notifier_target()` (Cloud Functions).

Settings load at import (cold start) and are refused unless `messages.enabled`, and `$OUTPOST_MESSAGES_TOPIC` (the
deployment's messages topic: an SNS topic ARN, or a Pub/Sub topic id) must be set and well formed; a function that
cannot publish fails its start loudly. Lambda receives an alarm's state change as the event of its Lambda action
(`outpost.notify.events.from_cloudwatch`); Cloud Functions as a Pub/Sub CloudEvent from the incidents topic
(`from_incident`). A malformed event raises `InvocationError` (the invocation fails, and is counted); anything
after it is the notifier's to log (`outpost.notify.notifier.notify`), never raised.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from typing import Any, Final

from outpost.config import Settings, has_userinfo
from outpost.deploy import deploys_notifier
from outpost.errors import ConfigError, InvocationError
from outpost.logs import emit
from outpost.notify.events import from_cloudwatch, from_incident
from outpost.notify.notifier import notify
from outpost.notify.seams import CloudLoggingSource, CloudWatchLogsSource, PubSubPublisher, SnsPublisher
from outpost.runtime.inhibitor import NO_CHECK
from outpost.settings import CONFIG_ENV, ENVIRONMENT_ENV, settings_from_environment

TOPIC_ENV: Final = "OUTPOST_MESSAGES_TOPIC"
"""Set on the notifier by the deployment: the `MessagesTopicArn` stack parameter (AWS) or the `messages_topic`
Terraform variable (Google Cloud)."""
RUNBOOK_BASE_ENV: Final = "OUTPOST_RUNBOOK_BASE_URL"
"""Set on the notifier by the deployment: the runbook link's prefix (`RunbookBaseUrl`, `runbook_base_url`)."""
_SNS_TOPIC: Final = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]{1,256}$")
_PUBSUB_TOPIC: Final = re.compile(r"^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/topics/[A-Za-z][A-Za-z0-9._~+%-]{2,254}$")
_RUNBOOK_BASE: Final = re.compile(r"^(https://[^\s$]{0,200})?$")


@functools.lru_cache(maxsize=4)
def _cold_start(
    config: str | None, environment: str | None, topic: str | None, base: str | None
) -> tuple[Settings, str, str]:
    environ = {key: value for key, value in ((CONFIG_ENV, config), (ENVIRONMENT_ENV, environment)) if value}
    settings = settings_from_environment(environ, only=NO_CHECK)
    if not deploys_notifier(settings):
        raise ConfigError(
            f"environment {settings.environment} sends no messages",
            ["messages.enabled: off, but the notifier's function was started"],
        )
    if not topic or not (_SNS_TOPIC.fullmatch(topic) or _PUBSUB_TOPIC.fullmatch(topic)):
        raise ConfigError(
            f"the notifier of environment {settings.environment} has no messages topic",
            [
                f"${TOPIC_ENV}: {'missing' if not topic else 'malformed'}: the SNS topic ARN (stack parameter "
                "MessagesTopicArn) or the Pub/Sub topic id projects/P/topics/T (Terraform variable messages_topic)"
            ],
        )
    runbook_base = base or ""
    if not _RUNBOOK_BASE.fullmatch(runbook_base) or has_userinfo(runbook_base):
        runbook_base = ""  # the link is then the path in the repository, as the alarm descriptions' fallback
    return settings, topic, runbook_base


def notifier_settings() -> tuple[Settings, str, str]:
    """The process's settings, its messages topic and its runbook base URL; ConfigError otherwise."""
    return _cold_start(
        os.environ.get(CONFIG_ENV),
        os.environ.get(ENVIRONMENT_ENV),
        os.environ.get(TOPIC_ENV),
        os.environ.get(RUNBOOK_BASE_ENV),
    )


def make_notifier_handler(logs_client: Any = None, sns_client: Any = None) -> Callable[[Any, Any], dict[str, Any]]:
    """The Lambda handler (`logs_client`, `sns_client`: boto3 clients, made on first use otherwise)."""
    settings, topic, runbook_base = notifier_settings()
    source = CloudWatchLogsSource(settings.environment, client=logs_client)
    publisher = SnsPublisher(topic, client=sns_client)

    def handler(event: Any, context: Any) -> dict[str, Any]:
        try:
            facts = from_cloudwatch(settings, event)
        except InvocationError as error:
            emit("WARNING", f"notifier: {error}", outcome="message refused", environment=settings.environment)
            raise
        if facts is None:
            return {"environment": settings.environment, "published": False, "ignored": "INSUFFICIENT_DATA"}
        return notify(settings, facts, source=source, publisher=publisher, runbook_base=runbook_base)

    handler.__name__ = handler.__qualname__ = "handler_notifier"
    return handler


def make_notifier_target(**rest: Any) -> Callable[[Any], None]:
    """The Cloud Functions CloudEvent function (registered with functions-framework as `notifier`, the entry point
    infra/gcp deploys it under, when functions-framework is importable: the Lambda bundle has none). `rest`:
    `transport` for both REST calls, `token` for the access token (tests' stand-ins)."""
    settings, topic, runbook_base = notifier_settings()
    project = settings.deploy.project if settings.deploy is not None else None
    source = CloudLoggingSource(project, settings.environment, **rest)
    publisher = PubSubPublisher(topic, **rest)

    def notifier(cloud_event: Any) -> None:
        data = getattr(cloud_event, "data", cloud_event)
        try:
            facts = from_incident(settings, data)
        except InvocationError as error:
            emit("WARNING", f"notifier: {error}", outcome="message refused", environment=settings.environment)
            raise
        notify(settings, facts, source=source, publisher=publisher, runbook_base=runbook_base)

    try:
        import functions_framework
    except ImportError:  # the Lambda bundle: no Cloud Functions runtime to register with
        return notifier
    registered: Callable[[Any], None] = functions_framework.cloud_event(notifier)
    return registered
