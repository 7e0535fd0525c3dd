"""A Clustered Hashmap (12/CHP) client agent written from the RFC alone, with pyzmq.

The server listens on three ports: P (ROUTER, snapshots), P+1 (PUB, updates) and P+2 (SUB, collects
the clients' KVSETs). The agent subscribes first, then asks for the snapshot, then applies only the
updates whose sequence is newer than the snapshot's: the order the RFC prescribes.
"""

from __future__ import annotations

import struct
import time
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Callable

import zmq
import zmq.utils.monitor

ICANHAZ = b"ICANHAZ?"
KTHXBAI = b"KTHXBAI"
HUGZ = b"HUGZ"


class ProtocolError(AssertionError):
    """The server sent frames that 12/CHP does not allow; the message says which and what was expected."""


def encode_sequence(sequence: int) -> bytes:
    return struct.pack(">Q", sequence)


def decode_sequence(frame: bytes, where: str, frames: list[bytes]) -> int:
    if len(frame) != 8:
        raise ProtocolError(f"{where}: frame 1 must be an 8-byte sequence number in network order, "
                            f"got {len(frame)} bytes in {show(frames)}")
    return struct.unpack(">Q", frame)[0]


def encode_properties(properties: dict[str, str]) -> bytes:
    return "".join(f"{name}={value}\n" for name, value in properties.items()).encode()


def decode_properties(frame: bytes) -> dict[str, str]:
    properties = {}
    for line in frame.decode(errors="replace").split("\n"):
        if line:
            name, _, value = line.partition("=")
            properties[name] = value
    return properties


def show(frames: list[bytes]) -> str:
    return "[" + ", ".join(repr(f) for f in frames) + "]"


@dataclass
class Entry:
    """One KVSYNC, KTHXBAI, KVPUB or HUGZ as received."""
    key: bytes
    sequence: int
    uuid: bytes
    properties: dict[str, str]
    value: bytes
    frames: list[bytes] = field(repr=False, default_factory=list)
    received_at: float = 0.0


def parse(frames: list[bytes], where: str) -> Entry:
    if len(frames) != 5:
        raise ProtocolError(f"{where} must have exactly 5 frames (key, sequence, uuid, properties, value), "
                            f"got {len(frames)}: {show(frames)}")
    return Entry(key=frames[0], sequence=decode_sequence(frames[1], where, frames), uuid=frames[2],
                 properties=decode_properties(frames[3]), value=frames[4], frames=frames,
                 received_at=time.monotonic())


class Agent:
    """A CHP client: `sync()` once, then `pump()` / `wait_for()` to follow updates, `set()` to change.

    Keeps every raw KVPUB in `updates` (to check the server's sequence order), the applied map in
    `store`, and the HUGZ arrival times in `hugz`. Sockets stay on the thread that made the agent.
    """

    def __init__(self, context: zmq.Context, host: str, port: int, subtree: bytes = b""):
        self.context = context
        self.host = host
        self.port = port
        self.subtree = subtree
        self.store: dict[bytes, bytes] = {}
        self.sequence = 0
        self.snapshot: list[Entry] = []
        self.kthxbai: Entry | None = None
        self.updates: list[Entry] = []
        self.discarded: list[Entry] = []
        self.hugz: list[Entry] = []
        self.publisher: zmq.Socket | None = None

        self.subscriber = context.socket(zmq.SUB)
        self.subscriber.setsockopt(zmq.LINGER, 0)
        self.subscriber.setsockopt(zmq.SUBSCRIBE, subtree)
        if subtree:
            # HUGZ does not start with the subtree; without this a subtree client would never see one.
            self.subscriber.setsockopt(zmq.SUBSCRIBE, HUGZ)
        connect_and_wait(self.subscriber, self._endpoint(1))
        # The subscription travels right after the handshake; give the server a moment to apply it.
        time.sleep(0.1)
        self.snapshot_socket = context.socket(zmq.DEALER)
        self.snapshot_socket.setsockopt(zmq.LINGER, 0)
        self.snapshot_socket.connect(self._endpoint(0))

    def _endpoint(self, offset: int) -> str:
        return f"tcp://{self.host}:{self.port + offset}"

    def sync(self, timeout: float = 5.0) -> None:
        """ICANHAZ? then KVSYNC* until KTHXBAI; the store then holds the subtree's snapshot."""
        self.snapshot_socket.send_multipart([ICANHAZ, self.subtree])
        deadline = time.monotonic() + timeout
        highest = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.snapshot_socket.poll(int(left * 1000), zmq.POLLIN):
                raise TimeoutError(f"no KTHXBAI from {self._endpoint(0)} within {timeout} s after "
                                   f"ICANHAZ? {self.subtree!r} ({len(self.snapshot)} KVSYNC so far)")
            frames = self.snapshot_socket.recv_multipart()
            if frames and frames[0] == KTHXBAI:
                entry = parse(frames, "KTHXBAI")
                if entry.value != self.subtree:
                    raise ProtocolError(f"KTHXBAI frame 4 must repeat the subtree {self.subtree!r}, "
                                        f"got {entry.value!r}")
                self.kthxbai = entry
                self.sequence = entry.sequence
                return
            entry = parse(frames, "KVSYNC")
            highest = max(highest, entry.sequence)
            self.snapshot.append(entry)
            if entry.value:
                self.store[entry.key] = entry.value
            else:
                self.store.pop(entry.key, None)

    def pump(self, timeout: float = 0.0) -> int:
        """Applies what the subscriber holds, waiting up to `timeout` for the first message."""
        count = 0
        wait_ms = int(timeout * 1000)
        while self.subscriber.poll(wait_ms, zmq.POLLIN):
            self._receive(self.subscriber.recv_multipart())
            count += 1
            wait_ms = 0
        return count

    def _receive(self, frames: list[bytes]) -> None:
        if frames and frames[0] == HUGZ:
            entry = parse(frames, "HUGZ")
            self.hugz.append(entry)
            return
        entry = parse(frames, "KVPUB")
        self.updates.append(entry)
        if entry.sequence <= self.sequence:
            self.discarded.append(entry)
            return
        self.sequence = entry.sequence
        if entry.value:
            self.store[entry.key] = entry.value
        else:
            self.store.pop(entry.key, None)

    def wait_for(self, predicate: Callable[[Entry], bool], timeout: float = 5.0,
                 what: str = "a matching KVPUB", since: int = 0) -> Entry:
        """The first KVPUB from `updates[since]` on (already received or arriving within `timeout`)
        that matches."""
        seen = since
        deadline = time.monotonic() + timeout
        while True:
            for entry in self.updates[seen:]:
                if predicate(entry):
                    return entry
            seen = len(self.updates)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{what} did not arrive within {timeout} s; received "
                                   f"{[(u.key, u.sequence, u.value[:32]) for u in self.updates[-10:]]}")
            self.pump(min(left, 0.05))

    def _publisher(self) -> zmq.Socket:
        if self.publisher is None:
            self.publisher = self.context.socket(zmq.PUB)
            self.publisher.setsockopt(zmq.LINGER, 1000)
            connect_and_wait(self.publisher, self._endpoint(2))
            # PUB drops until the server's subscription arrives, a moment after the handshake.
            time.sleep(0.2)
        return self.publisher

    def send_kvset(self, key: bytes, value: bytes, properties: dict[str, str] | None = None,
                   uuid: bytes | None = None, sequence: int = 0) -> bytes:
        """One KVSET; its sequence "has no significance" (12/CHP) and the server assigns its own."""
        uuid = uuid if uuid is not None else uuidlib.uuid4().bytes
        self._publisher().send_multipart([key, encode_sequence(sequence), uuid,
                                          encode_properties(properties or {}), value])
        return uuid

    def set(self, key: bytes, value: bytes, properties: dict[str, str] | None = None,
            timeout: float = 5.0) -> Entry:
        """KVSET, then waits for the server's KVPUB of it (resending if the first was dropped before
        the server's subscription reached our PUB). The key must lie in this agent's subtree."""
        if not key.startswith(self.subtree):
            raise ValueError(f"{key!r} is outside this agent's subtree {self.subtree!r}: it could not see its own KVPUB")
        deadline = time.monotonic() + timeout
        while True:
            start = len(self.updates)
            self.send_kvset(key, value, properties)
            try:
                return self.wait_for(lambda e: e.key == key and e.value == value, since=start,
                                     timeout=min(1.0, max(0.0, deadline - time.monotonic())),
                                     what=f"the KVPUB of {key!r}")
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"the server at {self._endpoint(2)} never published our KVSET of "
                                       f"{key!r} within {timeout} s")

    def close(self) -> None:
        for socket in (self.subscriber, self.snapshot_socket, self.publisher):
            if socket is not None:
                socket.close(linger=0)


def connect_and_wait(socket: zmq.Socket, endpoint: str, timeout: float = 5.0) -> None:
    """Connects and returns once the ZMTP handshake has succeeded, so a SUB's subscription or a PUB's
    peer is (about to be) in place instead of lost to the slow-joiner race."""
    monitor = socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
    try:
        socket.connect(endpoint)
        if not monitor.poll(int(timeout * 1000), zmq.POLLIN):
            raise TimeoutError(f"could not connect to {endpoint} within {timeout} s")
        zmq.utils.monitor.recv_monitor_message(monitor)
    finally:
        socket.disable_monitor()
        monitor.close(linger=0)
