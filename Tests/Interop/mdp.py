"""A Majordomo (7/MDP) client and worker written from the RFC alone, with pyzmq.

Nothing here knows Flowbus: if these talk to the Flowbus broker, so can any other correct
implementation. The management service (8/MMI) is just a request to "mmi.service".
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import zmq

CLIENT = b"MDPC01"
WORKER = b"MDPW01"

READY = b"\x01"
REQUEST = b"\x02"
REPLY = b"\x03"
HEARTBEAT = b"\x04"
DISCONNECT = b"\x05"

COMMAND_NAMES = {READY: "READY", REQUEST: "REQUEST", REPLY: "REPLY", HEARTBEAT: "HEARTBEAT", DISCONNECT: "DISCONNECT"}


class ProtocolError(AssertionError):
    """The broker sent frames that 7/MDP does not allow; the message says which and what was expected."""


class NoReply(TimeoutError):
    """The broker did not answer after every retry."""


def show(frames: list[bytes]) -> str:
    return "[" + ", ".join(repr(f) for f in frames) + "]"


class Client:
    """MDP/Client over a REQ socket, with the RFC's recommended recovery: poll with a timeout, and on
    silence close the socket, open a new one and resend, up to `retries` times."""

    def __init__(self, context: zmq.Context, endpoint: str, timeout: float = 2.0, retries: int = 3):
        self.context = context
        self.endpoint = endpoint
        self.timeout = timeout
        self.retries = retries
        self.socket: zmq.Socket | None = None
        self._open()

    def _open(self) -> None:
        if self.socket is not None:
            self.socket.close(linger=0)
        self.socket = self.context.socket(zmq.REQ)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(self.endpoint)

    def request(self, service: str | bytes, *body: bytes, timeout: float | None = None,
                retries: int | None = None) -> list[bytes]:
        """Sends REQUEST and returns the REPLY's body frames (frames 3+); raises NoReply on silence."""
        service_frame = service.encode() if isinstance(service, str) else service
        timeout = self.timeout if timeout is None else timeout
        attempts = 1 + (self.retries if retries is None else retries)
        for attempt in range(attempts):
            assert self.socket is not None
            self.socket.send_multipart([CLIENT, service_frame, *body])
            if self.socket.poll(int(timeout * 1000), zmq.POLLIN):
                frames = self.socket.recv_multipart()
                return self._check_reply(frames, service_frame)
            # Lazy Pirate: a REQ socket that got no reply cannot send again; start over on a new one.
            self._open()
        raise NoReply(f"no REPLY from the broker at {self.endpoint} for service {service_frame!r} "
                      f"after {attempts} attempt(s) of {timeout:.1f} s each")

    @staticmethod
    def _check_reply(frames: list[bytes], service: bytes) -> list[bytes]:
        if len(frames) < 3:
            raise ProtocolError(f"REPLY must have at least 3 frames after the REQ envelope "
                                f"('MDPC01', service, body...), got {len(frames)}: {show(frames)}")
        if frames[0] != CLIENT:
            raise ProtocolError(f"REPLY frame 1 must be b'MDPC01', got {frames[0]!r} in {show(frames)}")
        if frames[1] != service:
            raise ProtocolError(f"REPLY frame 2 must name the requested service {service!r}, "
                                f"got {frames[1]!r} in {show(frames)}")
        return frames[2:]

    def service_status(self, service: str, **kwargs) -> bytes:
        """8/MMI: b"200" when a worker serves `service`, b"404" when none does."""
        body = self.request("mmi.service", service.encode(), **kwargs)
        return body[0] if len(body) == 1 else b"|".join(body)

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close(linger=0)
            self.socket = None


Handler = Callable[[list[bytes]], list[bytes]]


@dataclass
class WorkerStats:
    """What a worker saw; read from the test thread, written by the worker thread (ints and lists
    only, updated by single assignments or appends, which the GIL makes atomic)."""
    requests: int = 0
    heartbeats_received: int = 0
    heartbeats_sent: int = 0
    disconnects_received: int = 0
    connections: int = 0
    reconnects_for_silence: int = 0
    bad_messages: list[list[bytes]] = field(default_factory=list)


class Worker:
    """MDP/Worker over a DEALER socket, on its own thread (pyzmq sockets belong to one thread).

    Sends READY, then serves REQUESTs one at a time with `handler(body) -> reply body`; sends
    HEARTBEAT every `heartbeat` seconds when it has sent nothing else; treats any broker command as a
    heartbeat; after `liveness` silent intervals, or on DISCONNECT, closes its socket and registers
    again on a new one.
    """

    def __init__(self, context: zmq.Context, endpoint: str, service: str, handler: Handler,
                 heartbeat: float = 1.0, liveness: int = 4, reconnect_delay: float = 0.2):
        self.context = context
        self.endpoint = endpoint
        self.service = service.encode()
        self.handler = handler
        self.heartbeat = heartbeat
        self.liveness = liveness
        self.reconnect_delay = reconnect_delay
        self.stats = WorkerStats()
        self._stop = threading.Event()
        self._close_silently = False
        self._registered = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"mdp-worker-{service}", daemon=True)
        self._failure: BaseException | None = None

    def start(self) -> "Worker":
        self._thread.start()
        if not self._registered.wait(5):
            raise RuntimeError(f"worker for {self.service!r} could not send READY to {self.endpoint} within 5 s")
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Sends DISCONNECT, then closes."""
        self._finish(silently=False)

    def kill(self) -> None:
        """Closes the socket without DISCONNECT, as a crashed process would."""
        self._finish(silently=True)

    def _finish(self, silently: bool) -> None:
        self._close_silently = silently
        self._stop.set()
        self._thread.join(5)
        if self._thread.is_alive():
            raise RuntimeError(f"worker thread for {self.service!r} did not stop within 5 s")
        if self._failure is not None:
            raise self._failure

    def _connect(self) -> zmq.Socket:
        socket = self.context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.connect(self.endpoint)
        socket.send_multipart([b"", WORKER, READY, self.service])
        self.stats.connections += 1
        self._registered.set()
        return socket

    def _run(self) -> None:
        try:
            self._serve()
        except BaseException as error:  # surfaced to the test by stop()/kill()
            self._failure = error

    def _serve(self) -> None:
        socket = self._connect()
        next_heartbeat = time.monotonic() + self.heartbeat
        last_heard = time.monotonic()
        tick = min(self.heartbeat, 0.05)
        while not self._stop.is_set():
            if socket.poll(int(tick * 1000), zmq.POLLIN):
                frames = socket.recv_multipart()
                last_heard = time.monotonic()
                command = self._command_of(frames)
                if command == REQUEST:
                    self.stats.requests += 1
                    client, body = frames[3], frames[5:]
                    reply = self.handler(body)
                    socket.send_multipart([b"", WORKER, REPLY, client, b"", *reply])
                    next_heartbeat = time.monotonic() + self.heartbeat
                elif command == HEARTBEAT:
                    self.stats.heartbeats_received += 1
                elif command == DISCONNECT:
                    self.stats.disconnects_received += 1
                    socket.close(linger=0)
                    time.sleep(self.reconnect_delay)
                    socket = self._connect()
                    next_heartbeat = time.monotonic() + self.heartbeat
            elif time.monotonic() - last_heard > self.heartbeat * self.liveness:
                # The broker is gone or has forgotten us: start a new conversation.
                self.stats.reconnects_for_silence += 1
                socket.close(linger=0)
                time.sleep(self.reconnect_delay)
                socket = self._connect()
                last_heard = time.monotonic()
                next_heartbeat = last_heard + self.heartbeat
            if time.monotonic() >= next_heartbeat:
                socket.send_multipart([b"", WORKER, HEARTBEAT])
                self.stats.heartbeats_sent += 1
                next_heartbeat = time.monotonic() + self.heartbeat
        if not self._close_silently:
            socket.send_multipart([b"", WORKER, DISCONNECT])
            # Give the DISCONNECT a moment to leave before the socket (linger 0) drops it.
            socket.setsockopt(zmq.LINGER, 500)
        socket.close()

    def _command_of(self, frames: list[bytes]) -> bytes | None:
        """Validates a broker command per 7/MDP; a malformed one is recorded and ignored."""
        valid = len(frames) >= 3 and frames[0] == b"" and frames[1] == WORKER
        command = frames[2] if valid else None
        if command == REQUEST:
            valid = len(frames) >= 6 and frames[4] == b""
        elif command in (HEARTBEAT, DISCONNECT):
            valid = len(frames) == 3
        else:
            valid = False
        if not valid:
            self.stats.bad_messages.append(frames)
            return None
        return command


def echo(body: list[bytes]) -> list[bytes]:
    return body
