"""Entry module of the notifier function: `handler` for AWS Lambda, `http` for Cloud Functions (a CloudEvent
function, registered as `notifier`).

Importing this module is the cold start: the environment's settings (`$OUTPOST_CONFIG`) are loaded and
validated once, messages must be on, and the messages topic (`$OUTPOST_MESSAGES_TOPIC`) must be set.
"""

from outpost.runtime.notifier import make_notifier_handler, make_notifier_target

handler = make_notifier_handler()
http = make_notifier_target()
