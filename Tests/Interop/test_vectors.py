"""The Python peers agree byte for byte with Flowbus's golden vectors (Protocols/vectors), so a
failure against the host is the host's and not a misreading of the contract on this side."""

from __future__ import annotations

from pathlib import Path

import chp
import envelope
import mdp

VECTORS = Path(__file__).resolve().parents[2] / "Protocols" / "vectors"


def frames(name: str) -> list[bytes]:
    """One ZeroMQ message: a frame per line in hex, `-` for an empty frame, `#` comments."""
    message = []
    for line in (VECTORS / name).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            message.append(b"" if line == "-" else bytes.fromhex(line))
    return message


def test_echo_request_envelope_matches_the_vector():
    body = envelope.encode(version=1, kind="flowbus.v1.Echo", payload=envelope.echo_payload("hello"),
                           idempotency_key="cli-1-0001", writer="cli", sent_at_unix_nanos=1767225600000000000)
    assert body == (VECTORS / "envelope-echo-request.pb").read_bytes()
    assert frames("mdp-client-request.frames") == [b"", mdp.CLIENT, b"flowbus.echo", body]


def test_every_envelope_vector_ends_with_its_check():
    assert envelope.crc32c(b"123456789") == 0xE3069283
    for path in sorted(VECTORS.glob("envelope-*.pb")):
        data = path.read_bytes()
        assert envelope.check_intact(data), path.name
        assert envelope.seal(data[:-5]) == data, path.name
        assert not envelope.check_intact(data[:-1]), path.name


def test_echo_reply_envelope_decodes():
    reply = envelope.decode((VECTORS / "envelope-echo-reply.pb").read_bytes())
    assert reply["version"] == 1 and reply["kind"] == "flowbus.v1.Echo"
    assert envelope.echo_text(reply["payload"]) == "hello"
    assert reply["incarnation"] == 1 and reply["writer"] == "echo"


def test_mdp_worker_vectors_match_the_rfc_layout():
    assert frames("mdp-worker-ready.frames") == [b"", mdp.WORKER, mdp.READY, b"flowbus.echo"]
    assert frames("mdp-worker-ready-credit.frames") == [b"", mdp.WORKER, mdp.READY, b"flowbus.echo", b"credit=16"]
    assert frames("mdp-worker-heartbeat.frames") == [b"", mdp.WORKER, mdp.HEARTBEAT]
    assert frames("mdp-worker-disconnect.frames") == [b"", mdp.WORKER, mdp.DISCONNECT]
    request = frames("mdp-worker-request.frames")
    assert request[:3] == [b"", mdp.WORKER, mdp.REQUEST] and request[4] == b"" and len(request) == 6
    assert frames("mdp-mmi-service-reply.frames")[-1] == b"200"


def test_chp_vectors_parse_with_the_agent():
    kvpub = chp.parse(frames("chp-kvpub.frames"), "KVPUB")
    assert (kvpub.key, kvpub.sequence) == (b"/s/abc/vm/signin", 43)
    assert kvpub.properties == {"ttl": "30", "sprev": "41"}
    delete = chp.parse(frames("chp-kvpub-delete.frames"), "KVPUB")
    assert (delete.sequence, delete.value, delete.properties["sprev"]) == (45, b"", "43")
    hugz = chp.parse(frames("chp-hugz.frames"), "HUGZ")
    assert hugz.frames == [chp.HUGZ, chp.encode_sequence(0), b"", b"", b""]
    assert frames("chp-icanhaz.frames") == [chp.ICANHAZ, b"/s/abc/"]
    kthxbai = chp.parse(frames("chp-kthxbai.frames"), "KTHXBAI")
    assert (kthxbai.key, kthxbai.sequence, kthxbai.value) == (chp.KTHXBAI, 42, b"/s/abc/")
    kvset = frames("chp-kvset.frames")
    assert len(kvset) == 5 and len(kvset[2]) == 16
    assert chp.decode_properties(kvset[3]) == {"ttl": "30"}
