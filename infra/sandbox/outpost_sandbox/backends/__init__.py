"""Sandbox health backends: the processes that answer where kwok's simulated pods cannot.

kwok runs no containers, so every endpoint a check reaches through the API server's proxy
(manager health, webhooks, node daemons, the example LS workload) is served by one daemon
(`server.py`) listening inside the `outpost-sbx` network namespace (`netns.py`) on the pod and
node IPs the real controllers assigned. Its behaviour is switchable at runtime (`behaviour.py`);
its TLS material comes from the sandbox webhook PKI (`pki.py`). `kube.py` is the sandbox's own
small API client (checks never use it).
"""
