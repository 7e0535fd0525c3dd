"""7/MDP and 8/MMI against the Flowbus broker, from a client and workers that know only the RFCs."""

from __future__ import annotations

import os
import signal
import time

import pytest
import zmq

import envelope
import mdp
from conftest import HEARTBEAT, LIVENESS


def wait_for_status(client: mdp.Client, service: str, wanted: bytes, within: float) -> float:
    """Asks mmi.service until it answers `wanted`; returns how long that took."""
    start = time.monotonic()
    status = None
    while time.monotonic() - start < within:
        status = client.service_status(service)
        if status == wanted:
            return time.monotonic() - start
        time.sleep(0.05)
    pytest.fail(f"mmi.service {service!r} still answers {status!r} after {within} s; expected {wanted!r}",
                pytrace=False)


@pytest.fixture
def start_worker(context):
    """`start_worker(host, service, handler)` registers a worker; any still running after the test
    is closed (without DISCONNECT) so a failed assertion leaves no thread behind."""
    started: list[mdp.Worker] = []

    def start(host, service: str, handler=mdp.echo) -> mdp.Worker:
        worker = mdp.Worker(context, host.broker, service, handler, heartbeat=HEARTBEAT, liveness=LIVENESS)
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        if worker.running:
            worker.kill()


def test_echo_worker_answers_every_request(host, client, start_worker):
    worker = start_worker(host, "interop.echo")
    wait_for_status(client, "interop.echo", b"200", within=2)
    for i in range(100):
        body = [f"request {i}".encode(), b"", bytes(range(i % 256)) * 3]
        assert client.request("interop.echo", *body) == body, f"request {i} got a wrong reply"
    assert worker.stats.requests == 100
    assert worker.stats.bad_messages == []
    worker.stop()


def test_mmi_service_is_200_for_a_registered_service_and_404_otherwise(host, client, start_worker):
    assert client.service_status("interop.echo") == b"404"
    worker = start_worker(host, "interop.echo")
    wait_for_status(client, "interop.echo", b"200", within=2)
    assert client.service_status("interop.unknown") == b"404"
    worker.stop()


def test_unimplemented_mmi_service_is_501(client):
    assert client.request("mmi.interop-nonexistent", b"x") == [b"501"]


def test_two_workers_share_the_load(host, client, start_worker):
    first = start_worker(host, "interop.shared", handler=lambda body: [b"first", *body])
    second = start_worker(host, "interop.shared", handler=lambda body: [b"second", *body])
    wait_for_status(client, "interop.shared", b"200", within=2)
    served = {b"first": 0, b"second": 0}
    for i in range(50):
        reply = client.request("interop.shared", str(i).encode())
        assert reply[1:] == [str(i).encode()]
        served[reply[0]] += 1
    assert served[b"first"] > 0 and served[b"second"] > 0, f"one worker did everything: {served}"
    assert first.stats.requests + second.stats.requests == 50
    first.stop()
    second.stop()


def test_heartbeating_worker_stays_registered_while_idle(host, client, start_worker):
    worker = start_worker(host, "interop.idle")
    wait_for_status(client, "interop.idle", b"200", within=2)
    idle = max(3.0, 3 * HEARTBEAT)
    time.sleep(idle)  # idleness is the condition under test, not a wait for an event
    assert client.request("interop.idle", b"still there?") == [b"still there?"]
    expected = int(idle / (2 * HEARTBEAT))
    assert worker.stats.heartbeats_received >= expected, (
        f"the broker sent {worker.stats.heartbeats_received} HEARTBEATs in {idle:.1f} s of idleness; "
        f"at an agreed interval of {HEARTBEAT} s expected at least {expected}")
    assert worker.stats.heartbeats_sent >= 1
    assert worker.stats.reconnects_for_silence == 0, "the worker heard nothing from the broker for too long"
    assert worker.stats.disconnects_received == 0, "the broker sent DISCONNECT to a heartbeating worker"
    assert worker.stats.connections == 1
    worker.stop()


def test_worker_that_dies_silently_is_dropped(host, client, start_worker):
    worker = start_worker(host, "interop.mortal")
    wait_for_status(client, "interop.mortal", b"200", within=2)
    worker.kill()
    waited = wait_for_status(client, "interop.mortal", b"404", within=max(5.0, 2 * HEARTBEAT * LIVENESS))
    assert waited > 0


def test_connected_worker_that_stops_heartbeating_is_dropped(context, host, client):
    """The socket stays open, so only MDP heartbeating can tell the broker this worker is gone."""
    socket = raw_worker(context, host)
    socket.send_multipart([b"", mdp.WORKER, mdp.READY, b"interop.mute"])
    wait_for_status(client, "interop.mute", b"200", within=2)
    wait_for_status(client, "interop.mute", b"404", within=max(5.0, 2 * HEARTBEAT * LIVENESS))
    heard = []
    while socket.poll(0, zmq.POLLIN):
        heard.append(socket.recv_multipart())
    assert heard and all(f == [b"", mdp.WORKER, mdp.HEARTBEAT] for f in heard), \
        f"before dropping the worker the broker must heartbeat it, and send nothing else: {heard}"
    late = socket.poll(int(2 * HEARTBEAT * 1000), zmq.POLLIN)
    assert not late or socket.recv_multipart() == [b"", mdp.WORKER, mdp.DISCONNECT], \
        "the broker kept sending commands to a worker it had dropped"


def test_worker_that_disconnects_is_dropped_at_once(host, client, start_worker):
    worker = start_worker(host, "interop.polite")
    wait_for_status(client, "interop.polite", b"200", within=2)
    worker.stop()
    wait_for_status(client, "interop.polite", b"404", within=1)


def test_request_waits_for_a_worker_that_registers_later(host, client, start_worker):
    """7/MDP: the broker SHOULD queue requests for a service nobody serves yet."""
    client.socket.send_multipart([mdp.CLIENT, b"interop.late", b"early bird"])
    time.sleep(0.3)
    worker = start_worker(host, "interop.late")
    assert client.socket.poll(3000, zmq.POLLIN), "the queued request was never delivered to the late worker"
    assert client.socket.recv_multipart() == [mdp.CLIENT, b"interop.late", b"early bird"]
    worker.stop()


def raw_worker(context, host) -> zmq.Socket:
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(host.broker)
    return socket


def expect_disconnect(socket: zmq.Socket, why: str) -> None:
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if socket.poll(100, zmq.POLLIN):
            frames = socket.recv_multipart()
            if frames[:3] == [b"", mdp.WORKER, mdp.HEARTBEAT]:
                continue
            assert frames == [b"", mdp.WORKER, mdp.DISCONNECT], f"{why}: expected DISCONNECT, got {mdp.show(frames)}"
            return
    pytest.fail(f"{why}: the broker sent no DISCONNECT within 3 s", pytrace=False)


def test_worker_registering_in_the_mmi_namespace_is_disconnected(context, host, client):
    socket = raw_worker(context, host)
    socket.send_multipart([b"", mdp.WORKER, mdp.READY, b"mmi.interop"])
    expect_disconnect(socket, "8/MMI: a worker that registers an mmi.* service MUST be disconnected")


def test_heartbeat_before_ready_is_answered_with_disconnect(context, host):
    socket = raw_worker(context, host)
    socket.send_multipart([b"", mdp.WORKER, mdp.HEARTBEAT])
    expect_disconnect(socket, "7/MDP: HEARTBEAT is valid only after READY")


def test_second_ready_is_answered_with_disconnect(context, host, client):
    socket = raw_worker(context, host)
    socket.send_multipart([b"", mdp.WORKER, mdp.READY, b"interop.twice"])
    wait_for_status(client, "interop.twice", b"200", within=2)
    socket.send_multipart([b"", mdp.WORKER, mdp.READY, b"interop.twice"])
    expect_disconnect(socket, "7/MDP: a further READY is a valid but unexpected command")
    wait_for_status(client, "interop.twice", b"404", within=1)


def test_worker_re_registers_after_the_broker_restarts(context, start_host, start_worker):
    first = start_host()
    worker = start_worker(first, "interop.phoenix")
    client = mdp.Client(context, first.broker, timeout=2.0, retries=2)
    wait_for_status(client, "interop.phoenix", b"200", within=2)
    client.close()
    second = first.restart()
    client = mdp.Client(context, second.broker, timeout=2.0, retries=2)
    wait_for_status(client, "interop.phoenix", b"200", within=HEARTBEAT * LIVENESS + 3)
    assert client.request("interop.phoenix", b"again") == [b"again"]
    assert worker.stats.connections >= 2, "the worker never started a new conversation"
    client.close()
    worker.stop()


def test_worker_reconnects_when_the_broker_falls_silent(context, host, client, start_worker):
    """The broker process is paused (SIGSTOP): no DISCONNECT, only silence. The worker must give up on
    it after its liveness, register again on a new socket, and be served once the broker resumes."""
    worker = start_worker(host, "interop.patient")
    wait_for_status(client, "interop.patient", b"200", within=2)
    os.kill(host.process.pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + HEARTBEAT * LIVENESS + 3
        while worker.stats.reconnects_for_silence == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.kill(host.process.pid, signal.SIGCONT)
    assert worker.stats.reconnects_for_silence >= 1, "the worker never noticed the broker's silence"
    assert client.request("interop.patient", b"awake?", timeout=3) == [b"awake?"]
    assert worker.stats.connections >= 2


def test_swift_echo_plugin_answers_a_python_client(context, start_host):
    host = start_host(plugins=["echo"])
    client = mdp.Client(context, host.broker, timeout=2.0, retries=2)
    wait_for_status(client, "flowbus.echo", b"200", within=10)
    for i in range(10):
        body = envelope.encode(version=1, kind="flowbus.v1.Echo", payload=envelope.echo_payload(f"hello {i}"),
                               idempotency_key=f"interop-{i}", writer="interop")
        reply = client.request("flowbus.echo", body)  # the client checks the service frame is flowbus.echo
        assert len(reply) == 1, f"a Flowbus reply body is exactly one frame, got {mdp.show(reply)}"
        fields = envelope.decode(reply[0])
        assert fields.get("version") == 1 and fields.get("kind") == "flowbus.v1.Echo", fields
        assert envelope.echo_text(fields.get("payload", b"")) == f"hello {i}"
        assert fields.get("idempotency_key") == f"interop-{i}"
    client.close()


def test_an_echo_request_with_a_check_that_disagrees_is_answered_damaged(context, start_host):
    """Protocols/README.md section 5: an envelope whose check disagrees with its bytes was changed
    on the way; the worker answers DAMAGED and the same bytes sent again are served. (flowbus.echo
    returns any other body as it came, so a body without a check is just echoed here; a Flowbus
    service answers that DAMAGED too: test_flow_client.py.)"""
    host = start_host(plugins=["echo"])
    client = mdp.Client(context, host.broker, timeout=2.0, retries=2)
    wait_for_status(client, "flowbus.echo", b"200", within=10)
    body = envelope.encode(version=1, kind="flowbus.v1.Echo", payload=envelope.echo_payload("intact"),
                           idempotency_key="interop-damage", writer="interop")
    for at in (0, len(body) // 2, len(body) - 1):
        changed = bytearray(body)
        changed[at] ^= 0x40
        fields = envelope.decode(client.request("flowbus.echo", bytes(changed))[0])
        assert fields.get("kind") == "flowbus.v1.Error", fields
        error = envelope.error_fields(fields.get("payload", b""))
        assert error["code"] == envelope.ERROR_CODE_DAMAGED, error
        assert "damaged" in error["message"] and error["hint"], error
    fields = envelope.decode(client.request("flowbus.echo", body)[0])
    assert envelope.echo_text(fields.get("payload", b"")) == "intact"
    client.close()


def test_request_for_a_service_nobody_registers_expires_with_unknown_service(client):
    """Protocols/README.md section 2: queued up to 5 s, then an Error envelope UNKNOWN_SERVICE."""
    started = time.monotonic()
    reply = client.request("interop.nobody", b"hello?", timeout=10, retries=0)
    waited = time.monotonic() - started
    assert len(reply) == 1, f"expected one Error envelope, got {mdp.show(reply)}"
    fields = envelope.decode(reply[0])
    assert fields.get("kind") == "flowbus.v1.Error", fields
    error = envelope.error_fields(fields.get("payload", b""))
    assert error["code"] == envelope.ERROR_CODE_UNKNOWN_SERVICE, error
    assert error["message"], "an Error says what happened"
    assert 3.0 <= waited <= 9.0, f"expired after {waited:.1f} s; the contract says about 5 s"


def test_replies_reach_the_right_one_of_many_dealer_clients(context, host, client, start_worker):
    """7/MDP allows DEALER clients (frame 0 made by hand); the broker routes each reply by client address."""
    first = start_worker(host, "interop.routing", handler=lambda body: [b"first", *body])
    second = start_worker(host, "interop.routing", handler=lambda body: [b"second", *body])
    wait_for_status(client, "interop.routing", b"200", within=2)
    dealers = []
    for _ in range(6):
        dealer = context.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect(host.broker)
        dealers.append(dealer)
    for round_ in range(10):
        for n, dealer in enumerate(dealers):
            dealer.send_multipart([b"", mdp.CLIENT, b"interop.routing", b"client %d round %d" % (n, round_)])
        for n, dealer in enumerate(dealers):
            assert dealer.poll(3000, zmq.POLLIN), f"client {n} got no reply in round {round_}"
            frames = dealer.recv_multipart()
            assert frames[:3] == [b"", mdp.CLIENT, b"interop.routing"], mdp.show(frames)
            assert frames[3] in (b"first", b"second") and frames[4:] == [b"client %d round %d" % (n, round_)]
    assert first.stats.requests + second.stats.requests == 60
    first.stop()
    second.stop()


def requests_within(socket: zmq.Socket, seconds: float, limit: int) -> list[list[bytes]]:
    """The REQUESTs a raw worker receives within `seconds` (at most `limit`); heartbeats skipped."""
    received: list[list[bytes]] = []
    deadline = time.monotonic() + seconds
    while len(received) < limit and time.monotonic() < deadline:
        if socket.poll(50, zmq.POLLIN):
            frames = socket.recv_multipart()
            if frames[:3] == [b"", mdp.WORKER, mdp.HEARTBEAT]:
                continue
            assert frames[:3] == [b"", mdp.WORKER, mdp.REQUEST] and frames[4] == b"", mdp.show(frames)
            received.append(frames)
    return received


def test_credit_extension_keeps_that_many_requests_in_flight(context, host, client):
    """Protocols/README.md §2: READY's fifth frame `credit=N` lets the broker send N requests before any REPLY."""
    socket = raw_worker(context, host)
    socket.send_multipart([b"", mdp.WORKER, mdp.READY, b"interop.credit", b"credit=3"])
    wait_for_status(client, "interop.credit", b"200", within=2)
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(host.broker)
    for n in range(4):
        dealer.send_multipart([b"", mdp.CLIENT, b"interop.credit", b"job %d" % n])
    held = requests_within(socket, 1.0, limit=4)
    assert [frames[5] for frames in held] == [b"job 0", b"job 1", b"job 2"], "credit 3: three REQUESTs, the fourth waits"
    # Replies in any order; each frees one place.
    for frames in reversed(held):
        socket.send_multipart([b"", mdp.WORKER, mdp.REPLY, frames[3], b"", b"done " + frames[5]])
    last = requests_within(socket, 3.0, limit=1)
    assert [frames[5] for frames in last] == [b"job 3"]
    socket.send_multipart([b"", mdp.WORKER, mdp.REPLY, last[0][3], b"", b"done job 3"])
    replies = []
    for _ in range(4):
        assert dealer.poll(3000, zmq.POLLIN), f"only {len(replies)} of 4 replies arrived"
        frames = dealer.recv_multipart()
        assert frames[:3] == [b"", mdp.CLIENT, b"interop.credit"], mdp.show(frames)
        replies.append(frames[3])
    assert sorted(replies) == [b"done job %d" % n for n in range(4)]


def test_ready_with_a_bad_credit_frame_is_not_registered(context, host, client):
    socket = raw_worker(context, host)
    socket.send_multipart([b"", mdp.WORKER, mdp.READY, b"interop.badcredit", b"credit=0"])
    time.sleep(0.3)
    assert client.service_status("interop.badcredit") == b"404"
