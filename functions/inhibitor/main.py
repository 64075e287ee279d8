"""Entry module of the inhibitor function: `handler` for AWS Lambda, `http` for Cloud Functions.

Importing this module is the cold start: the environment's settings (`$OUTPOST_CONFIG`) are loaded and
validated once, hold-back must be on, and the Vigilmon API key is resolved: this function alone holds it.
"""

from outpost.runtime.inhibitor import make_inhibitor_handler, make_inhibitor_target

handler = make_inhibitor_handler()
http = make_inhibitor_target()
