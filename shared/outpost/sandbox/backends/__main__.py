"""Entry point of the backend daemon: `python -m outpost.sandbox.backends --state-dir D --kubeconfig K`."""

from outpost.sandbox.backends.server import main

raise SystemExit(main())
