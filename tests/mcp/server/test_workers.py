"""The workers' sockets: one each on one address, a port served already refused."""

from __future__ import annotations

import errno
import socket

import pytest

from toolsets.mcp.server._workers import can_spread, listening_sockets, reuse_port_socket

pytestmark = pytest.mark.skipif(not can_spread(), reason="the kernel spreads connections on Linux")


def test_each_worker_gets_a_socket_of_its_own_on_one_address() -> None:
    slots, more = listening_sockets("127.0.0.1", 0, 3, None)
    added = more()
    try:
        assert len({id(sock) for sock in slots}) == 3
        assert len({sock.getsockname() for sock in [*slots, added]}) == 1
        assert all(sock.get_inheritable() for sock in slots)
    finally:
        for sock in [*slots, added]:
            sock.close()


def test_a_port_another_server_shares_the_same_way_is_refused() -> None:
    other = reuse_port_socket("127.0.0.1", 0)
    other.listen()
    try:
        with pytest.raises(OSError, match="in use") as raised:
            reuse_port_socket("127.0.0.1", other.getsockname()[1])
    finally:
        other.close()
    assert raised.value.errno == errno.EADDRINUSE


def test_a_socket_given_without_port_sharing_is_shared_by_the_workers() -> None:
    given = socket.socket()
    given.bind(("127.0.0.1", 0))
    try:
        slots, more = listening_sockets("127.0.0.1", 0, 2, given)
        assert slots == [given, given]
        assert more() is given
    finally:
        given.close()
