"""ibemu.fabric.lft: the forwarding table as bytes answers as the dict does (issue 28)."""
from __future__ import annotations

import pytest

from ibemu.fabric.lft import ForwardingTable, dense_ports
from ibemu.fabric.params import SwitchParams
from ibemu.fabric.switch import Switch


@pytest.mark.parametrize("table", [
    {}, {1: 1}, {5: 0, 7: 254, 9: 3}, {0xFFFF: 2},                # fit bytes
    {3: 255}, {4: 300}, {0x10000: 1}, {-1: 2}, {2: -1},          # do not: the dict answers
    {2**70: 1}, {1: 2**70}, {-2**70: 1}, {7: 1, 0x10000: 2},     # nor beyond 64 bits, nor one entry of many
])
def test_out_is_the_dict_lookup(table):
    fwd = ForwardingTable(dict(table))
    assert fwd.ports == (dense_ports(table) or b"")
    for dlid in list(table) + [0, 1, 2, 6, 8, 10, 0xFFFE, 0xFFFF, 0x10000, 0x10001]:
        assert fwd.out(dlid) == table.get(dlid), dlid


def test_bytes_are_port_plus_one():
    assert dense_ports({2: 0, 4: 7}) == bytes([0, 0, 1, 0, 8])
    assert dense_ports({}) == b""
    assert dense_ports({1: 255}) is None


def test_a_switch_table_is_replaced_whole():
    sw = Switch("sw", SwitchParams(), {5: 2})
    assert sw.fwd.table == {5: 2} and sw.fwd.out(5) == 2
    sw.fwd = ForwardingTable({6: 3})
    assert sw.fwd.out(5) is None and sw.fwd.out(6) == 3
