"""Entry point of the process node's kubelet: `python -m outpost_sandbox.kubelet --state-dir D --kubeconfig K ...`."""

from outpost_sandbox.kubelet.daemon import main

raise SystemExit(main())
