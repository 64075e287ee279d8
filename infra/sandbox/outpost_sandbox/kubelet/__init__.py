"""The sandbox's process node: a kubelet for one node whose pods run the real upstream managers as processes.

`daemon` is the node agent (node, Lease, pods, probes, status); `runtime` starts a pod's container as a process;
`podnet` gives each pod a network namespace owning its IP; `images` says which images the node can run.
"""
