"""Entry module of the `be-eviction-rate` function: `handler` for AWS Lambda, `http` for Cloud Functions.

Importing this module is the cold start: the environment's settings (`$OUTPOST_CONFIG`) are loaded and
validated once, and a bad configuration raises here with every bad field path.
"""

from outpost.runtime.aws_lambda import make_handler
from outpost.runtime.gcf import make_target

CHECK = "be-eviction-rate"

handler = make_handler(CHECK)
http = make_target(CHECK)
