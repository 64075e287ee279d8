"""The sandbox's listening ports stay out of the kernel's ephemeral range.

A component keeps its port across restarts; a port from the ephemeral range could meanwhile be taken
as the source port of an outgoing connection, and the restart would fail with "address already in use".
"""

from __future__ import annotations

import socket

from outpost_sandbox.state import LISTEN_PORT_FLOOR, ephemeral_port_floor, free_ports


def test_ports_are_distinct_free_and_below_the_ephemeral_range() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5
    assert all(LISTEN_PORT_FLOOR <= port < ephemeral_port_floor() for port in ports), ports
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # still free after the probe sockets were closed


def test_a_taken_port_is_never_handed_out() -> None:
    taken = free_ports(1)[0]
    with socket.socket() as held:
        held.bind(("127.0.0.1", taken))
        held.listen()
        assert taken not in free_ports(2000)


def test_the_ephemeral_floor_is_read_from_the_kernel() -> None:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
        assert ephemeral_port_floor() == int(fh.read().split()[0])
