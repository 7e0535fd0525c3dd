"""A Flowbus app client written from Protocols/ alone (README §1–§12 and flowbus/v1/*.proto).

It holds no table of any app: what a screen offers is read from what is published (§12 "What a
screen offers"), every intent is routed by the offered Action's `service` and `handler`, a session
is followed with 12/CHP and the `sprev` rule of §4, and app payloads are read through the
FileDescriptorSet an app publishes at /schema/<package>.

    client = FlowClient(context, broker="tcp://127.0.0.1:5555", clone="tcp://127.0.0.1:5556")
    client.open()                                   # CoordinatorCall openSession to coord.app
    client.wait_for(lambda c: c.offers("logIn"))    # follows /s/<session>/
    client.act("logIn", email="…", password="…")    # → Action.service, with the seen version
    client.payload(client.state())                  # the app's message, via /schema/<package>
    client.call("svc.mail", "outbox", email="…")    # ServiceCall → ServiceReply

Messages of the contract (flowbus.v1) are not hand-encoded: `protoc --descriptor_set_out` turns
Protocols/flowbus/v1/*.proto into a FileDescriptorSet at import time and protobuf's
descriptor_pool/message_factory build the classes from it, exactly as the app's payloads are
built from the set published at /schema/<package>. One mechanism for both, no generated code to
keep in step with the protobuf runtime, and the .proto files stay the only source.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable

import zmq

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError as missing:  # a clear failure: the suite is part of the product's tests
    raise ImportError("Python's protobuf is missing: run scripts/setup (pip install protobuf)") from missing

import chp
import mdp
from envelope import check_intact, seal

PROTOCOLS = Path(__file__).resolve().parents[2] / "Protocols"
WIRE_VERSION = 1


# --- flowbus.v1, from the .proto files --------------------------------------------------------

def _pool_from(file_set: descriptor_pb2.FileDescriptorSet) -> descriptor_pool.DescriptorPool:
    """A pool holding every file of the set, added in dependency order whatever the set's order."""
    pool = descriptor_pool.DescriptorPool()
    pending = list(file_set.file)
    while pending:
        added = [f for f in pending if all(_has_file(pool, d) for d in f.dependency)]
        if not added:
            missing = {d for f in pending for d in f.dependency if not _has_file(pool, d)}
            raise ValueError(f"the FileDescriptorSet does not hold its imports {sorted(missing)}")
        for file in added:
            pool.Add(file)
            pending.remove(file)
    return pool


def _has_file(pool: descriptor_pool.DescriptorPool, name: str) -> bool:
    try:
        pool.FindFileByName(name)
        return True
    except KeyError:
        return False


def _contract_file_set() -> descriptor_pb2.FileDescriptorSet:
    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    if not protoc:
        raise RuntimeError("protoc is missing: apt-get install protobuf-compiler (or set PROTOC); the client "
                           "reads flowbus.v1 from Protocols/flowbus/v1/*.proto through it")
    sources = sorted(str(p.relative_to(PROTOCOLS)) for p in (PROTOCOLS / "flowbus" / "v1").glob("*.proto"))
    with tempfile.TemporaryDirectory(prefix="flowbus-proto-") as directory:
        out = Path(directory) / "flowbus.v1.pb"
        subprocess.run([protoc, f"--proto_path={PROTOCOLS}", "--include_imports",
                        f"--descriptor_set_out={out}", *sources], check=True)
        return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


CONTRACT = _pool_from(_contract_file_set())


def message_class(full_name: str, pool: descriptor_pool.DescriptorPool = CONTRACT):
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))


Envelope = message_class("flowbus.v1.Envelope")
Error = message_class("flowbus.v1.Error")
Intent = message_class("flowbus.v1.Intent")
IntentReply = message_class("flowbus.v1.IntentReply")
ViewState = message_class("flowbus.v1.ViewState")
Navigation = message_class("flowbus.v1.Navigation")
Action = message_class("flowbus.v1.Action")
ActionRef = message_class("flowbus.v1.ActionRef")
CoordinatorCall = message_class("flowbus.v1.CoordinatorCall")
CoordinatorReply = message_class("flowbus.v1.CoordinatorReply")
ServiceCall = message_class("flowbus.v1.ServiceCall")
ServiceReply = message_class("flowbus.v1.ServiceReply")
ErrorCode = CONTRACT.FindEnumTypeByName("flowbus.v1.ErrorCode")
HANDLER_VIEW_MODEL = Action.Handler.Value("HANDLER_VIEW_MODEL")
HANDLER_COORDINATOR = Action.Handler.Value("HANDLER_COORDINATOR")
PHASE = {v.number: v.name for v in ViewState.DESCRIPTOR.enum_types_by_name["Phase"].values}


def code_name(code: int) -> str:
    value = ErrorCode.values_by_number.get(code)
    return value.name.removeprefix("ERROR_CODE_") if value else str(code)


class FlowError(Exception):
    """An Error the bus answered (an Error envelope, or IntentReply/CoordinatorReply/ServiceReply.error)."""

    def __init__(self, service: str, error):
        self.service = service
        self.code = code_name(error.code)
        self.message = error.message
        self.hint = error.hint
        super().__init__(f"{service}: {self.code}: {error.message}" + (f" ({error.hint})" if error.hint else ""))


class NotOffered(LookupError):
    """The client refused to send an action the screen does not offer now (§12: "A client sends only
    actions the screen offers")."""


class Refused(Exception):
    """A ServiceReply.refusal: the app said no, for a reason it explains to the user."""

    def __init__(self, service: str, method: str, refusal: str, reply):
        self.refusal = refusal
        self.reply = reply
        super().__init__(f"{service} {method}: refused: {refusal}")


# --- following one session (12/CHP + §4) -------------------------------------------------------

class SessionFollower:
    """Follows the subtree /s/<session>/ in the order of §3 and the `sprev` rule of §4, and fences
    values as §5/§12 say (per key and writer: a lower incarnation is ignored; within one, a
    key_version not greater than the last is a duplicate)."""

    def __init__(self, context: zmq.Context, host: str, port: int, session: str):
        self.subtree = f"/s/{session}/".encode()
        self.store: dict[str, tuple] = {}    # key -> (Envelope, decoded payload or None)
        self.last = 0
        self.snapshot_sequence = 0
        self.first = True
        self.resyncs = 0
        self.ignored: list[tuple[str, str]] = []  # (key, why) for values fenced out or unreadable
        self.hugz = 0
        self.history: list[tuple[int, str, object]] = []  # (sequence, key, decoded value or None): applied
        self._seen: dict[tuple[str, str], tuple[int, int]] = {}  # (key, writer) -> (incarnation, key_version)
        self._context, self._host, self._port = context, host, port
        self.subscriber = context.socket(zmq.SUB)
        self.subscriber.setsockopt(zmq.LINGER, 0)
        self.subscriber.setsockopt(zmq.SUBSCRIBE, self.subtree)
        self.subscriber.setsockopt(zmq.SUBSCRIBE, chp.HUGZ)
        chp.connect_and_wait(self.subscriber, f"tcp://{host}:{port + 1}")
        # §3: a Flowbus server answers every subscription with a HUGZ; a server that sends none is
        # asked anyway after 500 ms.
        if self.subscriber.poll(500, zmq.POLLIN):
            self._receive(self.subscriber.recv_multipart(), before_snapshot=True)
        self.snapshot_socket = context.socket(zmq.DEALER)
        self.snapshot_socket.setsockopt(zmq.LINGER, 0)
        self.snapshot_socket.connect(f"tcp://{host}:{port}")
        self.sync()

    def sync(self, timeout: float = 5.0) -> None:
        """Step 1 of §4: ICANHAZ?, apply the KVSYNCs, last = S."""
        snapshot = snapshot_of(self.snapshot_socket, self.subtree, timeout)
        self.store.clear()
        self._seen.clear()
        for entry in snapshot.entries:
            self._apply(entry)
        self.snapshot_sequence = self.last = snapshot.sequence
        self.first = True

    def pump(self, timeout: float = 0.0) -> int:
        """Applies what has arrived, waiting up to `timeout` for the first message."""
        count, wait_ms = 0, int(timeout * 1000)
        while self.subscriber.poll(wait_ms, zmq.POLLIN):
            self._receive(self.subscriber.recv_multipart())
            count, wait_ms = count + 1, 0
        return count

    def _receive(self, frames: list[bytes], before_snapshot: bool = False) -> None:
        if frames and frames[0] == chp.HUGZ:
            self.hugz += 1
            return
        entry = chp.parse(frames, "KVPUB")
        if before_snapshot or not entry.key.startswith(self.subtree):
            return  # before the snapshot: the snapshot holds it; another key: not ours
        if entry.sequence <= self.last:
            return  # a duplicate, or already in the snapshot
        sprev = int(entry.properties.get("sprev", "-1"))
        in_chain = sprev <= self.snapshot_sequence if self.first else sprev == self.last
        if not in_chain or sprev < 0:
            self.resyncs += 1  # an update of this session was missed: start again at step 1
            self.sync()
            return
        self._apply(entry)
        self.history.append((entry.sequence, entry.key.decode(), self.store.get(entry.key.decode(), (None, None))[1]))
        self.last, self.first = entry.sequence, False

    def _apply(self, entry: chp.Entry) -> None:
        key = entry.key.decode()
        if not entry.value:
            self.store.pop(key, None)
            # A deleted key starts again: its next writer may count key_version from 1.
            self._seen = {k: v for k, v in self._seen.items() if k[0] != key}
            return
        if not check_intact(entry.value):
            self.ignored.append((key, "damaged: the value does not end with a check that agrees with its bytes (§5)"))
            return
        try:
            envelope = Envelope.FromString(entry.value)
        except Exception as error:  # noqa: BLE001 - a value we cannot read is ignored, never fatal
            self.ignored.append((key, f"undecodable envelope: {error}"))
            return
        if envelope.version != WIRE_VERSION:
            self.ignored.append((key, f"envelope version {envelope.version}"))  # §6: keep the old value
            return
        incarnation, key_version = envelope.incarnation, envelope.key_version
        seen = self._seen.get((key, envelope.writer))
        # key_version 0 is "not counted" (the session record is written with none): only the
        # incarnation fences it.
        if seen and (incarnation < seen[0] or (incarnation == seen[0] and 0 < key_version <= seen[1])):
            self.ignored.append((key, f"fenced: {envelope.writer} incarnation {incarnation} "
                                      f"key_version {key_version} after {seen}"))
            return
        self._seen[(key, envelope.writer)] = (incarnation, key_version)
        self.store[key] = (envelope, decode_payload(envelope.kind, envelope.payload))

    def close(self) -> None:
        self.subscriber.close(linger=0)
        self.snapshot_socket.close(linger=0)


class Snapshot:
    def __init__(self, entries: list[chp.Entry], sequence: int):
        self.entries, self.sequence = entries, sequence


def snapshot_of(socket: zmq.Socket, subtree: bytes, timeout: float = 5.0) -> Snapshot:
    """ICANHAZ? subtree → KVSYNC* KTHXBAI, on a DEALER connected to the snapshot endpoint."""
    socket.send_multipart([chp.ICANHAZ, subtree])
    entries, deadline = [], time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not socket.poll(int(left * 1000), zmq.POLLIN):
            raise TimeoutError(f"no KTHXBAI within {timeout} s after ICANHAZ? {subtree!r}")
        frames = socket.recv_multipart()
        if frames and frames[0] == chp.KTHXBAI:
            return Snapshot(entries, chp.parse(frames, "KTHXBAI").sequence)
        entries.append(chp.parse(frames, "KVSYNC"))


def _error_of(message):
    """The Error a reply carries: the message itself, or its `error` field (empty when none)."""
    if message.DESCRIPTOR.full_name == "flowbus.v1.Error":
        return message
    return message.error if "error" in message.DESCRIPTOR.fields_by_name else Error()


def decode_payload(kind: str, payload: bytes):
    try:
        return message_class(kind).FromString(payload)
    except KeyError:
        return None  # not a flowbus.v1 message: the app's own, read with payload()


# --- the client ---------------------------------------------------------------------------------

_CLIENTS = itertools.count(1)


class FlowClient:
    """One client of one session. Nothing here knows an app."""

    def __init__(self, context: zmq.Context, broker: str, clone: str, *, writer: str | None = None,
                 timeout: float = 3.0, retries: int = 3):
        host, port = clone.removeprefix("tcp://").rsplit(":", 1)
        self.context, self.broker, self.clone_host, self.clone_port = context, broker, host, int(port)
        # README §12 "Writers, incarnations and fencing": a client writes as any name of its own,
        # with incarnation 0 (clients are never fenced).
        self.writer = writer or f"py-client/{os.getpid()}.{next(_CLIENTS)}"
        self.incarnation = 0
        self.mdp = mdp.Client(context, broker, timeout=timeout, retries=retries)
        self.session: str | None = None
        self.follower: SessionFollower | None = None
        self.forms: dict[str, dict[str, str]] = {}  # per Screen.id: the values typed so far
        self._keys = itertools.count(1)
        # Test hook: applied to the next request's first send only, as damage on the way would be.
        self.damage_next: Callable[[bytes], bytes] | None = None
        self.damaged_answers = 0  # requests answered DAMAGED and sent again (§5, §7)
        self._key_prefix = f"{self.writer}/{uuid.uuid4().hex[:8]}"  # unique across runs and hosts
        self.sent = 0  # MDP requests sent, retries included
        self._schemas: dict[str, descriptor_pool.DescriptorPool] = {}

    # -- MDP requests --------------------------------------------------------------------------

    def request(self, service: str, payload, *, key: str | None = None, unavailable_retries: int = 5):
        """Sends one Envelope and returns the reply's payload message. Lazy Pirate (mdp.Client)
        resends the very same bytes, so every retry carries the same idempotency key; an
        UNAVAILABLE answer is retried later with that key too (§7)."""
        body = Envelope(version=WIRE_VERSION, kind=payload.DESCRIPTOR.full_name,
                        payload=payload.SerializeToString(deterministic=True),
                        idempotency_key=key or f"{self._key_prefix}/{next(self._keys)}",
                        session=self.session or "", incarnation=self.incarnation, writer=self.writer,
                        sent_at_unix_nanos=time.time_ns()).SerializeToString()
        body = seal(body)  # §5: every envelope ends with its check
        damage, self.damage_next = self.damage_next, None
        for attempt in range(unavailable_retries + 1):
            self.sent += 1
            frames = self.mdp.request(service, damage(body) if damage else body)
            damage = None
            if len(frames) != 1:
                raise AssertionError(f"{service}: a reply must be one body frame (§2), got {len(frames)}")
            if not check_intact(frames[0]):
                raise AssertionError(f"{service}: the reply does not end with a check that agrees with its bytes (§5)")
            reply = Envelope.FromString(frames[0])
            if reply.version != WIRE_VERSION:
                raise AssertionError(f"{service}: reply envelope version {reply.version} (§6)")
            message = decode_payload(reply.kind, reply.payload)
            if message is None:
                raise AssertionError(f"{service}: reply of unknown kind {reply.kind!r}")
            if code_name(_error_of(message).code) == "DAMAGED" and attempt < unavailable_retries:
                self.damaged_answers += 1  # §7: nothing was applied; the same bytes again, at once
                continue
            if code_name(_error_of(message).code) == "UNAVAILABLE" and attempt < unavailable_retries:
                time.sleep(0.2 * (attempt + 1))
                continue
            if reply.kind == "flowbus.v1.Error":
                raise FlowError(service, message)
            return message
        raise AssertionError("unreachable")

    def call(self, service: str, method: str, *values: str, **args: str):
        """A ServiceCall to any svc.*; returns the ServiceReply (raises on error or refusal)."""
        reply = self.request(service, ServiceCall(method=method, args={k: str(v) for k, v in args.items()},
                                                  values=list(values)))
        if reply.HasField("error"):
            raise FlowError(f"{service} {method}", reply.error)
        if reply.refusal:
            raise Refused(service, method, reply.refusal, reply)
        return reply

    def coordinator(self, service: str, method: str, **args: str):
        reply = self.request(service, CoordinatorCall(method=method, args=args))
        if not reply.ok:
            raise FlowError(f"{service} {method}", reply.error)
        return reply

    # -- the session ---------------------------------------------------------------------------

    def open(self, session: str | None = None) -> str:
        """openSession to coord.app (args.session to attach to an existing one), then follow it."""
        reply = self.coordinator("coord.app", "openSession", **({"session": session} if session else {}))
        self.session = reply.result["session"]
        self.follow()
        return self.session

    def follow(self) -> None:
        if self.follower is not None:
            self.follower.close()
        self.follower = SessionFollower(self.context, self.clone_host, self.clone_port, self.session)

    def close_session(self):
        """closeSession to coord.app, the session in Envelope.session (§12)."""
        return self.coordinator("coord.app", "closeSession")

    def close(self) -> None:
        if self.follower is not None:
            self.follower.close()
        self.mdp.close()

    def pump(self, timeout: float = 0.0) -> int:
        return self.follower.pump(timeout)

    def wait_for(self, predicate: Callable[["FlowClient"], object], timeout: float = 10.0, what: str = ""):
        """Follows the session until predicate(self) is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate(self)
            if value:
                return value
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{what or 'the condition'} did not hold within {timeout} s; now: {self.describe()}")
            self.follower.pump(min(left, 0.1))

    # -- what is published ---------------------------------------------------------------------

    def value(self, key: str):
        found = self.follower.store.get(f"/s/{self.session}/{key}")
        return found[1] if found else None

    @property
    def navigation(self):
        return self.value("nav")

    @property
    def record(self):
        """The session record (/s/<id>/meta, flowbus.v1.SessionRecord), None once closed."""
        return self.value("meta")

    @property
    def top(self):
        """The screen on top: the modal if one shows, else the top of the selected tab's stack."""
        nav = self.navigation
        if nav is None:
            return None
        if nav.HasField("modal"):
            return nav.modal
        stacks = nav.stacks
        if nav.root == Navigation.RootKind.Value("ROOT_KIND_TABS"):
            stacks = [s for s in stacks if s.tab == nav.selected_tab]
        return stacks[-1].screens[-1] if stacks and stacks[-1].screens else None

    def state(self, screen=None):
        """The ViewState of `screen` (default: the top one) when its screen_id is that screen's id."""
        screen = screen or self.top
        if screen is None or not screen.view_model:
            return None
        found = self.value(f"vm/{screen.kind}")
        return found if found is not None and found.screen_id == screen.id else None

    def presentation(self):
        screen = self.top
        if screen is None:
            return None
        if not screen.view_model:
            return screen.presentation
        state = self.state(screen)
        return state.presentation if state is not None else None

    def actions(self) -> dict[str, object]:
        """Every action the top screen offers now, by name: its view model's (ViewState.actions of
        its state), its owner's (Screen.actions) and the navigation owner's (Navigation.actions)."""
        screen, nav = self.top, self.navigation
        if screen is None:
            return {}
        state = self.state(screen)
        offered = {}
        for action in itertools.chain(state.actions if state is not None else [], screen.actions, nav.actions):
            offered.setdefault(action.name, action)
        return offered

    def offers(self, name: str, enabled: bool = True):
        action = self.actions().get(name)
        return action if action is not None and (not enabled or not action.disabled) else None

    def components(self, kind: str) -> list:
        presentation = self.presentation()
        if presentation is None:
            return []
        return [getattr(c, kind) for c in presentation.components if c.WhichOneof("component") == kind]

    def fields(self) -> dict[str, object]:
        return {f.name: f for f in self.components("field")}

    def collections(self) -> list:
        return self.components("collection")

    def buttons(self) -> list:
        return [ref for row in self.components("buttons") for ref in row.buttons]

    # -- acting --------------------------------------------------------------------------------

    def act(self, action, key: str | None = None, **fields: str):
        """Sends the intent `action` (a name, an ActionRef, or an Action) on the top screen, routed
        by what the screen offers; `fields` fill the form fields the action reads. Raises
        NotOffered before sending anything the screen does not offer now, FlowError when refused."""
        screen, nav = self.top, self.navigation
        ref_values: dict[str, str] = {}
        if isinstance(action, str):
            name = action
        elif action.DESCRIPTOR.full_name == "flowbus.v1.ActionRef":
            name, ref_values = action.action, dict(action.values)
        else:
            name = action.name
        offered = self.actions().get(name)
        if offered is None:
            raise NotOffered(f"{name!r} is not offered on {screen.kind if screen else 'no screen'!r}: "
                             f"offered {sorted(self.actions())}")
        if offered.disabled:
            raise NotOffered(f"{name!r} is disabled on {screen.kind!r}: {offered.disabled_reason}")
        unknown = set(fields) - set(offered.fields)
        if unknown:
            raise NotOffered(f"{name!r} on {screen.kind!r} reads the fields {list(offered.fields)}, "
                             f"not {sorted(unknown)}")
        form = self.forms.setdefault(screen.id, {})
        form.update(fields)
        values = {f: form.get(f, "") for f in offered.fields}
        values.update(ref_values)
        values.update(fields)
        if offered.handler == HANDLER_VIEW_MODEL:
            state = self.state(screen)
            version = state.screen_version if state is not None else 0
        else:
            version = nav.version
        intent = Intent(screen=screen.kind, action=name, fields=values, screen_version=version,
                        screen_id=screen.id, params=dict(screen.params))
        reply = self.request(offered.service, intent, key=key)
        if not reply.applied:
            raise FlowError(f"{offered.service} {name}", reply.error)
        if offered.clears_fields:
            for field in offered.fields:
                form.pop(field, None)
        return reply

    def select(self, collection, item) -> object:
        """Selects an entry of a published Collection: its action with its field = the entry's id."""
        return self.act(collection.action, **{collection.field: item.id})

    # -- app payloads --------------------------------------------------------------------------

    def payload(self, message):
        """The app's own message in a ViewState (payload/payload_kind) or ServiceReply, decoded
        through the FileDescriptorSet published at /schema/<package>."""
        if message is None or not message.payload_kind:
            return None
        return message_class(message.payload_kind, self.schema_for(message.payload_kind)).FromString(message.payload)

    def schema_for(self, kind: str) -> descriptor_pool.DescriptorPool:
        """The pool of the published package that `kind` belongs to: the longest /schema/<package>
        whose package is a dotted prefix of the kind."""
        package = max((p for p in self._schemas if kind.startswith(p + ".")), key=len, default=None)
        if package is None:
            self._load_schemas()
            package = max((p for p in self._schemas if kind.startswith(p + ".")), key=len, default=None)
        if package is None:
            raise LookupError(f"no /schema/<package> published for {kind!r}; published: {sorted(self._schemas)}")
        return self._schemas[package]

    def _load_schemas(self) -> None:
        socket = self.context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.connect(f"tcp://{self.clone_host}:{self.clone_port}")
        try:
            snapshot = snapshot_of(socket, b"/schema/")
        finally:
            socket.close(linger=0)
        for entry in snapshot.entries:
            if not entry.value:
                continue
            envelope = Envelope.FromString(entry.value)
            if envelope.kind != "google.protobuf.FileDescriptorSet":
                raise AssertionError(f"{entry.key!r} holds {envelope.kind!r}, not a FileDescriptorSet (§3)")
            package = entry.key.decode().removeprefix("/schema/")
            self._schemas[package] = _pool_from(descriptor_pb2.FileDescriptorSet.FromString(envelope.payload))

    # -- for messages --------------------------------------------------------------------------

    def describe(self) -> str:
        if self.follower is None:
            return "no session"
        screen, state = self.top, self.state()
        where = f"{screen.kind}#{screen.id}" if screen else "no screen"
        phase = f"{PHASE.get(state.phase)} v{state.screen_version} notice={state.notice!r} {state.message!r}" \
            if state is not None else "no state"
        nav = self.navigation
        return (f"session {self.session}, nav v{nav.version if nav else '-'} on {where}, {phase}, "
                f"offers {sorted(self.actions())}, keys {sorted(self.follower.store)}, "
                f"resyncs {self.follower.resyncs}, ignored {self.follower.ignored[-3:]}")

