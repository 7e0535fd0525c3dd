"""12/CHP against the Flowbus clone server, from agents that know only the RFC."""

from __future__ import annotations

import time

import pytest

import chp
import envelope
from conftest import LOOPBACK


def value(text: str) -> bytes:
    """A Flowbus value (Protocols/README.md section 5): one Envelope."""
    return envelope.encode(version=1, kind="flowbus.v1.Echo", payload=envelope.echo_payload(text), writer="interop")


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

    for i in range(5, 9):
        writer.set(subtree + b"k%d" % i, b"v%d" % i)
    writer.send_kvset(subtree + b"k9", b"v9", sequence=1 << 40)  # a writer's sequence means nothing
    joiner.wait_for(lambda e: e.key == subtree + b"k9")
    joiner.pump(0.1)
    assert [u.key for u in joiner.updates] == [subtree + b"k%d" % i for i in range(5, 10)]
    assert_strictly_increasing(joiner.updates, after=joiner.kthxbai.sequence)
    assert joiner.updates[-1].sequence == joiner.updates[-2].sequence + 1, "the server's sequence, not the writer's"
    assert_well_formed(joiner.updates)
    assert joiner.discarded == []
    writer.pump(0.1)
    assert joiner.store == writer.store == {subtree + b"k%d" % i: b"v%d" % i for i in range(10)}


def test_snapshot_and_updates_hold_only_the_requested_subtree(agents):
    writer = agents(b"/s/")
    writer.set(b"/s/abc/one", value("1"))
    writer.set(b"/s/abcd/two", value("2"))

    narrow = agents(b"/s/abc/")
    assert [entry.key for entry in narrow.snapshot] == [b"/s/abc/one"]
    assert narrow.kthxbai.value == b"/s/abc/"
    everything = agents(b"")
    assert everything.store == {b"/s/abc/one": value("1"), b"/s/abcd/two": value("2")}
    assert everything.kthxbai.value == b""

    writer.set(b"/s/abcd/three", value("3"))
    writer.set(b"/s/abc/four", value("4"))
    narrow.wait_for(lambda e: e.key == b"/s/abc/four")
    narrow.pump(0.2)
    assert [u.key for u in narrow.updates] == [b"/s/abc/four"]
    assert narrow.store == {b"/s/abc/one": value("1"), b"/s/abc/four": value("4")}


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


def assert_chained(updates: list[chp.Entry], session: bytes, start: int = 0) -> int:
    """Each KVPUB of `session` names the previous one's sequence in `sprev`; returns the last sequence."""
    previous = start
    chain = [u for u in updates if u.key.startswith(b"/s/" + session + b"/")]
    for update in chain:
        lines = [line for line in update.frames[3].split(b"\n") if line.startswith(b"sprev=")]
        assert len(lines) == 1, f"{update.key!r} @{update.sequence} must carry exactly one sprev: {update.frames[3]!r}"
        assert update.properties["sprev"] == str(previous), (
            f"{update.key!r} @{update.sequence}: sprev={update.properties['sprev']}, expected {previous} "
            f"(chain {[(u.key, u.sequence, u.properties.get('sprev')) for u in chain]})")
        previous = update.sequence
    return previous


def test_session_keys_chain_with_sprev(agents):
    everything = agents(b"")
    chain = agents(b"/s/chain/")
    chain.set(b"/s/chain/nav", value("n1"))
    everything.set(b"/s/other/nav", value("elsewhere"))
    everything.set(b"/v/home/chain", value("copy"))
    chain.set(b"/s/chain/vm/home", value("h1"), properties={"x-interop": "kept", "sprev": "999"})
    everything.set(b"/s/other/vm/home", value("elsewhere"))
    chain.set(b"/s/chain/vm/home", b"")
    chain.set(b"/s/chain/vm/brief", value("t"), properties={"ttl": "1"})
    chain.wait_for(lambda e: e.key == b"/s/chain/vm/brief" and e.value == b"", timeout=5,
                   what="the ttl expiry of /s/chain/vm/brief")
    last = chain.set(b"/s/chain/nav", value("n2"))
    everything.wait_for(lambda e: e.sequence == last.sequence)

    assert_strictly_increasing(everything.updates, after=everything.kthxbai.sequence)
    assert assert_chained(everything.updates, b"chain") == last.sequence
    assert_chained(everything.updates, b"other")
    assert assert_chained(chain.updates, b"chain") == last.sequence
    copy = next(u for u in everything.updates if u.key == b"/v/home/chain")
    assert "sprev" not in copy.properties, f"keys outside /s/ carry no sprev: {copy.frames[3]!r}"
    tagged = next(u for u in chain.updates if u.properties.get("x-interop"))
    assert tagged.properties["x-interop"] == "kept", "the writer's own properties travel in the KVPUB"

    late = agents(b"/s/chain/")
    assert late.kthxbai.sequence >= last.sequence
    following = chain.set(b"/s/chain/nav", value("n3"))
    first = late.wait_for(lambda e: e.sequence == following.sequence)
    assert int(first.properties["sprev"]) <= late.kthxbai.sequence
    assert first.properties["sprev"] == str(last.sequence)


def test_joiner_during_a_burst_of_writes_converges(agents):
    """Subscribe, snapshot, then only KVPUBs newer than KTHXBAI: with writes racing the snapshot, the
    joiner must end with exactly the writer's final map (the point of 12/CHP's ordering)."""
    subtree = b"/interop/burst/"
    writer = agents(subtree)
    writer.set(subtree + b"warm", b"up")
    expected = {subtree + b"warm": b"up"}
    for i in range(300):
        key, data = subtree + b"k%d" % (i % 40), b"v%d" % i
        writer.send_kvset(key, data)
        expected[key] = data
    joiner = agents(subtree)  # joins while the server may still be publishing the burst
    for i in range(300, 600):
        key = subtree + b"k%d" % (i % 40)
        data = b"" if i % 7 == 0 else b"v%d" % i
        writer.send_kvset(key, data)
        if data:
            expected[key] = data
        else:
            expected.pop(key, None)
    writer.set(subtree + b"done", b"yes")
    expected[subtree + b"done"] = b"yes"
    joiner.wait_for(lambda e: e.key == subtree + b"done", timeout=10)
    assert_strictly_increasing(writer.updates, after=writer.kthxbai.sequence)
    assert len(writer.updates) == 602, "the server lost or duplicated KVSETs from one writer"
    assert writer.store == expected
    assert joiner.store == expected, (f"joiner diverged: missing {set(expected) - set(joiner.store)}, "
                                      f"extra {set(joiner.store) - set(expected)}, "
                                      f"wrong {[k for k in expected if k in joiner.store and joiner.store[k] != expected[k]]}")
