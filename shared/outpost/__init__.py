"""Outpost: outside-in health checks for Kubernetes control-plane extensions.

Each check reads the cluster only through the API server and reports a `Result`; a Vigilmon
heartbeat is sent only for `ok`/`degraded`, so silence is the alarm.
"""

__version__ = "0.1.0"
