"""Entry point of the backend daemon: `python -m outpost_sandbox.backends --state-dir D --kubeconfig K`."""

from outpost_sandbox.backends.server import main

raise SystemExit(main())
