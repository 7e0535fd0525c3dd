"""12/CHP against the Flowbus clone server, from agents that know only the RFC."""

from __future__ import annotations

import time

import pytest

import chp
from conftest import LOOPBACK


@pytest.fixture
def agents(context, host):
    """`agents(subtree)` makes a synchronised agent; all are closed after the test."""
    made: list[chp.Agent] = []

    def make(subtree: bytes = b"", sync: bool = True) -> chp.Agent:
        agent = chp.Agent(context, LOOPBACK, host.clone_port, subtree)
        made.append(agent)
        if sync:
            agent.sync()
        return agent

    yield make
    for agent in made:
        agent.close()


def assert_well_formed(entries: list[chp.Entry]) -> None:
    for entry in entries:
        assert len(entry.uuid) in (0, 16), f"KVPUB frame 2 must be empty or a 16-byte UUID: {chp.show(entry.frames)}"


def assert_strictly_increasing(entries: list[chp.Entry], after: int) -> None:
    previous = after
    for entry in entries:
        assert entry.sequence > previous, (f"KVPUB sequence {entry.sequence} of {entry.key!r} is not greater than "
                                           f"the previous {previous}: {[(e.key, e.sequence) for e in entries]}")
        previous = entry.sequence


def test_late_joiner_gets_the_snapshot_then_live_updates(agents):
    subtree = b"/interop/late/"
    writer = agents(subtree)
    for i in range(5):
        writer.set(subtree + b"k%d" % i, b"v%d" % i)

    joiner = agents(subtree)
    assert joiner.store == {subtree + b"k%d" % i: b"v%d" % i for i in range(5)}
    assert joiner.kthxbai is not None
    highest_synced = max(entry.sequence for entry in joiner.snapshot)
    assert joiner.kthxbai.sequence >= highest_synced, "KTHXBAI's sequence is below a KVSYNC's"

    for i in range(5, 10):
        writer.set(subtree + b"k%d" % i, b"v%d" % i)
    joiner.wait_for(lambda e: e.key == subtree + b"k9")
    joiner.pump(0.1)
    assert [u.key for u in joiner.updates] == [subtree + b"k%d" % i for i in range(5, 10)]
    assert_strictly_increasing(joiner.updates, after=joiner.kthxbai.sequence)
    assert_well_formed(joiner.updates)
    assert joiner.discarded == []
    assert joiner.store == writer.store == {subtree + b"k%d" % i: b"v%d" % i for i in range(10)}


def test_snapshot_and_updates_hold_only_the_requested_subtree(agents):
    writer = agents(b"/s/")
    writer.set(b"/s/abc/one", b"1")
    writer.set(b"/s/abcd/two", b"2")

    narrow = agents(b"/s/abc/")
    assert [entry.key for entry in narrow.snapshot] == [b"/s/abc/one"]
    assert narrow.kthxbai.value == b"/s/abc/"

    writer.set(b"/s/abcd/three", b"3")
    writer.set(b"/s/abc/four", b"4")
    narrow.wait_for(lambda e: e.key == b"/s/abc/four")
    narrow.pump(0.2)
    assert [u.key for u in narrow.updates] == [b"/s/abc/four"]
    assert narrow.store == {b"/s/abc/one": b"1", b"/s/abc/four": b"4"}


def test_empty_value_deletes_the_key(agents):
    writer = agents(b"/interop/del/")
    writer.set(b"/interop/del/gone", b"here")
    writer.set(b"/interop/del/kept", b"here")
    deletion = writer.set(b"/interop/del/gone", b"")
    assert deletion.value == b""
    assert writer.store == {b"/interop/del/kept": b"here"}

    joiner = agents(b"/interop/del/")
    assert [entry.key for entry in joiner.snapshot] == [b"/interop/del/kept"]


def test_ttl_expiry_publishes_a_delete(agents):
    writer = agents(b"/interop/ttl/")
    written = writer.set(b"/interop/ttl/brief", b"soon gone", properties={"ttl": "1"})
    expiry = writer.wait_for(lambda e: e.key == b"/interop/ttl/brief" and e.value == b"", timeout=5,
                             what="the KVPUB deleting the key after its ttl of 1 s")
    lived = expiry.received_at - written.received_at
    assert 0.8 <= lived <= 3.5, f"a key with ttl=1 lived {lived:.2f} s"
    assert expiry.sequence > written.sequence
    assert b"/interop/ttl/brief" not in writer.store

    joiner = agents(b"/interop/ttl/")
    assert joiner.snapshot == []


def test_hugz_arrive_when_idle(agents):
    listener = agents(b"/interop/quiet/")
    deadline = time.monotonic() + 3
    while not listener.hugz and time.monotonic() < deadline:
        listener.pump(0.1)
    assert listener.hugz, "no HUGZ within 3 s of idleness (12/CHP: the server SHOULD send one about every second)"
    hugz = listener.hugz[0]
    assert hugz.frames[0] == chp.HUGZ and hugz.sequence == 0
    assert hugz.frames[2:] == [b"", b"", b""], f"HUGZ frames 2-4 must be empty: {chp.show(hugz.frames)}"
    assert listener.updates == []
