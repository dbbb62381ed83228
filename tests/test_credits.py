"""Per-VL link-level credits (ibemu.fabric.credits): the modulo-4096 FCTBS/FCCL/ABR
arithmetic and the documented half-range comparison rule."""
from __future__ import annotations

import pytest

from ibemu.fabric.credits import BLOCK, HALF, MAX_CAPACITY_BLOCKS, MOD, CreditRx, CreditTx, blocks_of

# ----------------------------------------------------------------- blocks_of

@pytest.mark.parametrize("nbytes, blocks", [
    (0, 0), (1, 1), (63, 1), (64, 1), (65, 2), (128, 2), (129, 3),
    (2074, 33), (2048 + 26, 33), (4096, 64),
])
def test_blocks_of_rounds_up_to_64_byte_blocks(nbytes, blocks):
    assert blocks_of(nbytes) == blocks
    assert blocks_of(nbytes) == -(-nbytes // BLOCK)


# ----------------------------------------------------------------- CreditTx

def test_tx_starts_without_credit():
    tx = CreditTx()
    assert tx.fctbs == 0 and tx.fccl == 0
    assert tx.available() == 0
    assert not tx.can_send(1)
    assert not tx.can_send(33)


def test_tx_can_send_up_to_the_limit_exactly():
    tx = CreditTx()
    tx.update(100)
    assert tx.available() == 100
    assert tx.can_send(100)
    assert not tx.can_send(101)
    tx.sent(60)
    assert tx.fctbs == 60
    assert tx.available() == 40
    assert tx.can_send(40)
    assert not tx.can_send(41)
    tx.sent(40)
    assert tx.available() == 0
    assert not tx.can_send(1)
    tx.update(133)                      # the receiver freed 33 blocks
    assert tx.available() == 33
    assert tx.can_send(33) and not tx.can_send(34)


def test_tx_update_masks_to_12_bits():
    tx = CreditTx()
    tx.update(4096 + 7)
    assert tx.fccl == 7
    assert tx.available() == 7


def test_tx_wraps_past_4095():
    """FCTBS starting at 4090: many packets carry FCTBS and FCCL across the wrap; the
    available credit stays FCCL - FCTBS in modulo-4096 arithmetic throughout."""
    tx = CreditTx()
    tx.fctbs = 4090
    cap = 4 * 33                        # a 4-packet buffer
    abr = 4090                          # receiver's blocks received, in sync with the sender
    tx.update(abr + cap)                # = 126 after the wrap
    assert tx.fccl == (4090 + cap) % MOD == 126
    assert tx.available() == cap
    in_flight = []
    total = 0
    for i in range(1000):               # 33000 blocks: about 8 wraps of the 12-bit counters
        # send while credit allows
        while tx.can_send(33):
            before = tx.available()
            tx.sent(33)
            abr = (abr + 33) % MOD
            total += 33
            assert tx.available() == before - 33
            in_flight.append(33)
        assert len(in_flight) == 4       # never more than the buffer holds
        assert not tx.can_send(33)
        assert tx.available() == 0
        # the receiver frees one packet and grants more credit
        in_flight.pop(0)
        tx.update(abr + cap - 33 * len(in_flight))   # FCCL = ABR + free blocks
        assert tx.available() == 33
    assert tx.fctbs == (4090 + total) % MOD
    assert total > 8 * MOD


def test_tx_exact_boundary_across_wrap():
    tx = CreditTx()
    tx.fctbs = 4090
    tx.update((4090 + 100) % MOD)       # FCCL = 94
    assert tx.fccl == 94
    assert tx.can_send(100)
    assert not tx.can_send(101)
    tx.sent(6)
    assert tx.fctbs == 0                # wrapped exactly
    assert tx.available() == 94
    tx.sent(94)
    assert tx.fctbs == 94 and tx.available() == 0 and not tx.can_send(1)


def test_stale_fccl_never_grants_credit():
    """Half-range rule: an FCCL older than FCTBS grants nothing, even though
    (FCCL - FCTBS) mod 4096 is large -- for any packet with lag + blocks < 2048 (real
    packets are at most 66 blocks)."""
    tx = CreditTx()
    tx.update(500)
    tx.sent(400)
    tx.update(300)                      # a delayed, older flow-control packet
    assert tx.available() == 0
    for n in (1, 2, 33, 66, 100, 1000, 2048 - 100 - 1):
        assert not tx.can_send(n), n
    # across the wrap: FCTBS = 10, stale FCCL = 4000 (behind by 106)
    tx = CreditTx()
    tx.fctbs = 10
    tx.update(4000)
    assert tx.available() == 0
    assert not tx.can_send(1)
    assert not tx.can_send(33)
    # a limit exactly equal to FCTBS grants nothing either
    tx.update(10)
    assert tx.available() == 0 and not tx.can_send(1)
    assert tx.can_send(0)


def test_half_range_window_edges():
    tx = CreditTx()
    tx.update(HALF - 1)                 # the largest grant ibemu allows
    assert tx.available() == HALF - 1
    assert tx.can_send(HALF - 1)
    assert not tx.can_send(HALF)
    tx.update(HALF)                     # exactly half a range ahead: ambiguous, read as stale
    assert tx.available() == 0


# ----------------------------------------------------------------- CreditRx

def test_rx_capacity_bounds():
    assert MAX_CAPACITY_BLOCKS == 2047
    CreditRx(1)
    CreditRx(2047)
    for bad in (0, -1, 2048, 4096):
        with pytest.raises(ValueError):
            CreditRx(bad)


def test_rx_fccl_is_abr_plus_free():
    rx = CreditRx(132)
    assert rx.fccl() == 132 and rx.free() == 132
    assert rx.received(33)
    assert rx.abr == 33 and rx.used == 33
    assert rx.fccl() == 132             # ABR grew by what the buffer lost: same limit
    assert rx.free() == 99
    rx.freed(33)
    assert rx.used == 0
    assert rx.fccl() == 165             # freed space extends the limit
    assert rx.free() == 132


def test_rx_overrun_detection():
    rx = CreditRx(100)
    assert rx.received(60)
    assert rx.received(40)              # exactly full is fine
    assert rx.free() == 0
    assert not rx.received(1)           # overrun: reported, not buffered
    assert rx.used == 100
    assert rx.abr == 101                # the blocks still count as received
    rx.freed(60)
    assert rx.received(33)
    assert rx.used == 73


def test_rx_sync_sets_abr_to_fctbs():
    rx = CreditRx(64)
    rx.received(10)
    rx.sync(4000 + 4096)                # masked to 12 bits
    assert rx.abr == 4000
    assert rx.fccl() == (4000 + 64 - 10) % MOD
    rx.freed(10)
    assert rx.fccl() == 4064


def test_rx_abr_and_fccl_wrap():
    rx = CreditRx(2047)
    rx.sync(4095)
    assert rx.fccl() == (4095 + 2047) % MOD == 2046
    assert rx.received(33)
    assert rx.abr == 32
    rx.freed(33)
    assert rx.fccl() == (32 + 2047) % MOD


def test_sender_and_receiver_stay_in_step_with_lost_fcps():
    """End to end: the receiver's FCCL, delivered to the sender, never lets the sender
    overrun the buffer -- even if some flow-control packets are lost -- and every FCP
    that arrives restores the exact credit."""
    cap = 5 * 33
    rx, tx = CreditRx(cap), CreditTx()
    tx.fctbs = 4000
    rx.sync(tx.fctbs)
    tx.update(rx.fccl())
    buffered = []
    sent = 0
    for step in range(2000):
        if tx.can_send(33):
            tx.sent(33)
            assert rx.received(33), "overrun at step %d" % step
            buffered.append(33)
            sent += 1
        if step % 3 == 0 and buffered:
            rx.freed(buffered.pop(0))
            if step % 7 != 0:           # some FCPs are lost
                tx.update(rx.fccl())
                assert tx.available() == rx.free()
    assert sent > 500
