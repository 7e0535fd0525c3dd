"""Whole journeys of the package's apps, driven by flow_client.py: a client written from Protocols/
alone that knows no app. Everything below picks what to do from what the screens publish
(actions, presentation fields, collections, tabs); the test knows only what a person at the screen
would know: the account, the names of the buttons to press, the e-mail to read the code from.

Each test starts a real `flowbus up --app NAME` on loopback TCP (conftest.py)."""

from __future__ import annotations

import re
import time

import pytest
import zmq

import mdp
from flow_client import (Action, CONTRACT, FlowClient, FlowError, Intent, NotOffered, ViewState, snapshot_of)

PHASE_LOADING = ViewState.Phase.Value("PHASE_LOADING")
PHASE_SUCCESS = ViewState.Phase.Value("PHASE_SUCCESS")
PHASE_ERROR = ViewState.Phase.Value("PHASE_ERROR")
FIELD = CONTRACT.FindMessageTypeByName("flowbus.v1.Field").enum_types_by_name["Kind"]
KIND_TEXT, KIND_SECRET, KIND_NUMBER, KIND_CHOICE, KIND_MULTI_CHOICE = (
    FIELD.values_by_name[n].number for n in ("KIND_TEXT", "KIND_SECRET", "KIND_NUMBER", "KIND_CHOICE",
                                             "KIND_MULTI_CHOICE"))
CAROUSEL = CONTRACT.FindMessageTypeByName("flowbus.v1.Collection").enum_types_by_name["Style"] \
    .values_by_name["STYLE_CAROUSEL"].number
WAIT = 20.0  # the shared test machine can be slow; every wait ends as soon as its condition holds


# --- hosts and clients --------------------------------------------------------------------------

def start_app(start_host, context, app: str):
    host = start_host(app=app)
    # The broker queues a request for a service nobody serves yet (§2), but give the navigation
    # owner its time to register on a loaded machine rather than expire the first openSession.
    probe = mdp.Client(context, host.broker, timeout=1.0, retries=0)
    deadline = time.monotonic() + WAIT
    try:
        while time.monotonic() < deadline:
            try:
                if probe.service_status("coord.app") == b"200":
                    return host
            except mdp.NoReply:
                pass
            time.sleep(0.1)
        pytest.fail(f"coord.app did not register within {WAIT} s\n{host.describe()}", pytrace=False)
    finally:
        probe.close()


@pytest.fixture
def movies(start_host, context):
    return start_app(start_host, context, "movies")


@pytest.fixture
def clients(context):
    """`clients(host)` makes a FlowClient; all are closed after the test."""
    made: list[FlowClient] = []

    def make(host) -> FlowClient:
        client = FlowClient(context, host.broker, host.clone, timeout=5.0, retries=3)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


# --- reading screens, as a person would ---------------------------------------------------------

def shown(kind: str | None = None, screen_id: str | None = None):
    """The top screen is `kind` (and `screen_id`) and ready: a screen with a view model has a state of
    its own (screen_id matches) that is not loading; one without needs none."""
    def predicate(client: FlowClient):
        screen = client.top
        if screen is None or (kind and screen.kind != kind) or (screen_id and screen.id != screen_id):
            return False
        if not screen.view_model:
            return True
        state = client.state()
        return state is not None and state.phase != PHASE_LOADING
    return predicate


def loaded(kind: str | None = None, screen_id: str | None = None):
    def predicate(client: FlowClient):
        return shown(kind, screen_id)(client) and (not client.top.view_model or
                                                    client.state().phase == PHASE_SUCCESS)
    return predicate


def fill(client: FlowClient, action: str, *, email: str, password: str, name: str = "Ana Teste") -> dict:
    """Values for every field `action` reads, chosen from the published Field (its kind, options and
    max_length), as a person filling the form would."""
    offered = client.offers(action)
    assert offered is not None, f"{action!r} is not offered: {client.describe()}"
    published = client.fields()
    values = {}
    for field_name in offered.fields:
        field = published.get(field_name)
        assert field is not None, (f"{action!r} reads the field {field_name!r}, which the presentation "
                                   f"does not show: {sorted(published)}")
        if field.kind == KIND_SECRET:
            value = password
        elif field.kind == KIND_MULTI_CHOICE:
            assert len(field.options) >= 2, f"{field_name!r} offers {len(field.options)} choices"
            value = ",".join(option.id for option in field.options[:2])
        elif field.kind == KIND_CHOICE:
            value = field.options[0].id
        elif field.kind == KIND_NUMBER:
            value = "1"
        elif "mail" in (field.name + field.label).lower():
            value = email
        else:
            value = name
        if field.max_length:
            assert len(value) <= field.max_length, f"{value!r} is longer than {field_name!r} allows"
        values[field_name] = value
    return values


def contains(message, wanted: str) -> bool:
    """Whether a decoded protobuf message holds the string `wanted` in any field, at any depth."""
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry:
            if any(wanted in (str(k), str(v)) or (hasattr(v, "ListFields") and contains(v, wanted))
                   for k, v in value.items()):
                return True
            continue
        repeated = descriptor.is_repeated if hasattr(descriptor, "is_repeated") \
            else descriptor.label == descriptor.LABEL_REPEATED
        for item in (value if repeated else [value]):
            if (contains(item, wanted) if descriptor.message_type is not None else item == wanted):
                return True
    return False


def heading(client: FlowClient) -> str:
    return " ".join(t.text for t in client.components("text"))


def selectable(client: FlowClient, where=lambda collection: True):
    found = [c for c in client.collections() if c.action and c.items and where(c)]
    assert found, f"no selectable collection here: {client.describe()}"
    return found[0]


def offered_matching(client: FlowClient, pattern: str) -> Action | None:
    """The enabled action whose name or label matches `pattern` (case-insensitive)."""
    rule = re.compile(pattern, re.IGNORECASE)
    return next((a for a in client.actions().values()
                 if not a.disabled and (rule.search(a.name) or rule.search(a.label))), None)


def record(client: FlowClient):
    return client.value("meta")


# --- the movies app -----------------------------------------------------------------------------

DEMO = {"email": "demo@flowbus.dev", "password": "flowbus123"}


def sign_in(client: FlowClient, email: str, password: str) -> None:
    client.wait_for(lambda c: shown("signin")(c) and c.offers("logIn"), WAIT, "the sign-in screen")
    client.act("logIn", **fill(client, "logIn", email=email, password=password))
    client.wait_for(loaded("home"), WAIT, "Home after signing in")


def test_movies_sign_in_actor_film_like_likes_settings_log_out(movies, clients):
    client = clients(movies)
    session = client.open()
    assert session and client.session == session

    sign_in(client, **DEMO)
    assert record(client).user == DEMO["email"]

    # An actor from a carousel of Home, as published: its Details.
    carousel = selectable(client, lambda c: c.style == CAROUSEL and "actor" in c.title.lower())
    actor = carousel.items[0]
    client.select(carousel, actor)
    client.wait_for(lambda c: loaded("details")(c) and actor.title in heading(c), WAIT, f"the details of {actor.title}")
    actor_screen = client.top.id

    # A film of the actor's, from the collection its Details publish.
    films = selectable(client)
    film = films.items[0]
    client.select(films, film)
    client.wait_for(lambda c: loaded("details")(c) and c.top.id != actor_screen and film.title in heading(c),
                    WAIT, f"the details of {film.title}")

    # Like it with the button the screen draws for it (an ActionRef, sent with its values).
    like = next((b for b in client.buttons() if b.action == "like"), None)
    assert like is not None, f"no like button: {client.describe()}"
    before = client.state().screen_version
    reply = client.act(like)
    assert reply.applied and reply.screen_version > before
    client.wait_for(lambda c: c.state().screen_version >= reply.screen_version and c.state().phase == PHASE_SUCCESS,
                    WAIT, "the state after liking")

    # The Likes tab lists it: in its presentation and in its app payload, read via /schema/movies.v1.
    tabs = [stack.tab for stack in client.navigation.stacks]
    assert "likes" in tabs, f"no likes tab in {tabs}"
    client.act("selectTab", tab="likes")
    client.wait_for(loaded("likes"), WAIT, "the Likes tab")
    state = client.state()
    assert state.payload_kind.startswith("movies.v1."), state.payload_kind
    payload = client.payload(state)
    assert payload.DESCRIPTOR.file.pool is client.schema_for(state.payload_kind)
    assert contains(payload, film.id), f"{film.id} is not in the Likes payload:\n{payload}"
    assert any(item.id == film.id for c in client.collections() for item in c.items)

    # Settings, log out: back on sign-in, signed out.
    client.act("selectTab", tab="settings")
    client.wait_for(lambda c: loaded("settings")(c) and c.offers("logOut"), WAIT, "Settings")
    client.act("logOut")
    client.wait_for(lambda c: c.top is not None and c.top.kind == "signin", WAIT, "sign-in after logging out")
    client.wait_for(lambda c: record(c) is not None and record(c).user == "", WAIT, "a signed-out session record")
    assert client.navigation.root == client.navigation.RootKind.Value("ROOT_KIND_STACK")
    assert client.follower.hugz >= 1  # the server answered our subscription with one (§3)
    assert client.follower.ignored == []
    sequences = [sequence for sequence, _, _ in client.follower.history]
    assert sequences == sorted(set(sequences))


def test_movies_sign_in_offers_log_in_again_after_log_out(movies, clients):
    client = clients(movies)
    client.open()
    sign_in(client, **DEMO)
    client.act("selectTab", tab="settings")
    client.wait_for(lambda c: loaded("settings")(c) and c.offers("logOut"), WAIT, "Settings")
    client.act("logOut")
    client.wait_for(lambda c: shown("signin")(c) and c.offers("logIn"), WAIT, "logIn offered again on sign-in")
    client.act("logIn", **fill(client, "logIn", **DEMO))
    client.wait_for(loaded("home"), WAIT, "Home after signing in again")


def test_movies_sign_up_with_the_mailed_code(movies, clients):
    client = clients(movies)
    client.open()
    client.wait_for(lambda c: shown("signin")(c) and c.offers("register"), WAIT, "the sign-in screen")
    client.act("register")

    # The sign-up form: every field the action reads, filled from what each published Field says;
    # the genres are the first two of the published choices.
    client.wait_for(lambda c: loaded("signup")(c) and any(f.kind == KIND_MULTI_CHOICE and f.options
                                                          for f in c.fields().values()), WAIT, "the sign-up form")
    email = "ana.teste@example.com"
    values = fill(client, "signUp", email=email, password="s3nha-forte!")
    chosen = next(f for f in client.fields().values() if f.kind == KIND_MULTI_CHOICE)
    assert values[chosen.name] == ",".join(o.id for o in chosen.options[:2])
    client.act("signUp", **values)

    # The verification screen; the code comes from the mail service.
    client.wait_for(lambda c: shown()(c) and c.offers("verify"), WAIT, "the e-mail verification screen")
    mail = client.call("svc.mail", "outbox", email=email)
    code = mail.result["token"]
    assert re.fullmatch(r"\d{6}", code), mail
    (code_field,) = client.offers("verify").fields
    field = client.fields()[code_field]
    assert field.kind == KIND_NUMBER and len(code) <= field.max_length
    client.act("verify", **{code_field: code})

    client.wait_for(loaded("home"), WAIT, "Home after verifying")
    client.wait_for(lambda c: record(c).user == email, WAIT, "the session record of the new user")


def test_movies_actions_not_offered_are_refused_before_sending(movies, clients):
    client = clients(movies)
    client.open()
    client.wait_for(lambda c: shown("signin")(c) and c.offers("logIn"), WAIT, "the sign-in screen")
    sent = client.sent

    with pytest.raises(NotOffered, match="not offered"):
        client.act("logOut")            # another screen's action
    with pytest.raises(NotOffered, match="disabled"):
        client.act("back")              # offered by the navigation owner, disabled on a first screen
    assert client.actions()["back"].disabled_reason
    with pytest.raises(NotOffered, match="reads the fields"):
        client.act("logIn", email="x@y.z", nickname="nobody")  # a field logIn does not read
    with pytest.raises(NotOffered, match="not offered"):
        client.act("selectTab", tab="likes")  # no tabs yet
    assert client.sent == sent, "the client sent something it should have refused"

    # The worker refuses it too, when a client sends it anyway (§12: INVALID_FIELD).
    screen = client.top
    reply = client.request("vm.signin", Intent(screen=screen.kind, action="logOut", screen_id=screen.id,
                                                screen_version=client.state().screen_version))
    assert not reply.applied and reply.error.code == CONTRACT.FindEnumTypeByName(
        "flowbus.v1.ErrorCode").values_by_name["ERROR_CODE_INVALID_FIELD"].number


def test_movies_two_clients_on_one_session_one_gets_stale_intent(movies, clients):
    first, second = clients(movies), clients(movies)
    session = first.open()
    assert second.open(session) == session
    for client in (first, second):
        client.wait_for(lambda c: shown("signin")(c) and c.offers("logIn"), WAIT, "the sign-in screen")
    seen = first.state().screen_version
    assert second.state().screen_version == seen

    # A view model's action: both act on the version they saw; the later one is stale.
    first.act("logIn", email=DEMO["email"], password="not-the-password")
    with pytest.raises(FlowError) as stale:
        second.act("logIn", **DEMO)
    assert stale.value.code == "STALE_INTENT", stale.value
    for client in (first, second):
        client.wait_for(lambda c: c.state().phase == PHASE_ERROR, WAIT, "the refused sign-in")
    assert first.state().screen_version == second.state().screen_version > seen

    # A coordinator's action: checked against Navigation.version.
    nav = first.navigation.version
    first.act("register")
    with pytest.raises(FlowError) as stale:
        second.act("forgotPassword")
    assert stale.value.code == "STALE_INTENT", stale.value
    # Render the current screen, then act again: now it is applied.
    second.wait_for(lambda c: c.navigation.version > nav and shown("signup")(c), WAIT, "sign-up on the second client")
    assert second.act("back").applied
    first.wait_for(lambda c: shown("signin")(c), WAIT, "sign-in again on the first client")


def test_movies_a_retried_intent_is_applied_once(movies, clients):
    """A retry carries the idempotency key of the first delivery (Lazy Pirate): applied once."""
    client = clients(movies)
    client.open()
    client.wait_for(lambda c: shown("signin")(c) and c.offers("logIn"), WAIT, "the sign-in screen")
    first = client.act("logIn", key="retry-1", email=DEMO["email"], password="wrong")
    client.wait_for(lambda c: c.state().phase == PHASE_ERROR, WAIT, "the refused sign-in")
    version = client.state().screen_version
    # The same intent again (its first reply "lost"), now with the right password: the worker
    # recognises the key and answers what it answered, without signing in.
    again = client.act("logIn", key="retry-1", email=DEMO["email"], password=DEMO["password"])
    assert again.applied and again.screen_version == first.screen_version
    client.pump(1.0)
    assert client.state().screen_version == version and client.top.kind == "signin"


def test_movies_damaged_requests_are_answered_damaged_and_applied_once_sent_again(movies, clients):
    """§5 and §7: a request cut short, with a byte changed, or written without its check is
    answered DAMAGED and applies nothing; the same bytes sent again are served once."""
    client = clients(movies)

    def flip(body: bytes) -> bytes:
        changed = bytearray(body)
        changed[len(body) // 2] ^= 0x10
        return bytes(changed)

    client.damage_next = flip
    client.open()
    client.wait_for(lambda c: shown("signin")(c) and c.offers("logIn"), WAIT, "the sign-in screen")
    client.damage_next = lambda body: body[:-5]  # no check at all, as a writer without it sends
    client.act("logIn", email=DEMO["email"], password="wrong")
    client.wait_for(lambda c: c.state().phase == PHASE_ERROR, WAIT, "the refused sign-in")
    client.damage_next = lambda body: body[:len(body) // 2]  # cut short
    reply = client.act("logIn", email=DEMO["email"], password=DEMO["password"])
    assert reply.applied
    client.wait_for(lambda c: shown("home")(c), WAIT, "Home")
    assert client.damaged_answers == 3


def test_movies_follower_resyncs_after_a_lost_update(movies, clients):
    client = clients(movies)
    client.open()
    client.wait_for(lambda c: shown("signin")(c) and c.offers("logIn"), WAIT, "the sign-in screen")
    client.pump(0.3)
    client.act("logIn", email=DEMO["email"], password="wrong")  # loading, then error: two updates
    # Lose the first update of the session on purpose, as a dropped PUB message would.
    subscriber = client.follower.subscriber
    while True:
        assert subscriber.poll(int(WAIT * 1000)), "no update after logIn"
        frames = subscriber.recv_multipart()
        if frames[0].startswith(client.follower.subtree):
            break
    client.wait_for(lambda c: c.state() is not None and c.state().phase == PHASE_ERROR, WAIT, "the error state")
    assert client.follower.resyncs == 1


def test_movies_service_calls(movies, clients):
    client = clients(movies)
    with pytest.raises(FlowError) as failed:
        client.call("svc.mail", "noSuchMethod")
    # §7 names no code for an unknown method; a method is a payload field that failed validation.
    assert failed.value.code in ("INVALID_FIELD", "MALFORMED"), failed.value
    assert client.call("svc.mail", "outbox", email="nobody@example.com").result.get("count", "0") == "0"


def left_of(client: FlowClient, session: str) -> list[str]:
    """Every key of the map that still belongs to `session` (§12: nothing once it is closed)."""
    socket = client.context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(f"tcp://{client.clone_host}:{client.clone_port}")
    try:
        keys = [entry.key.decode() for subtree in (f"/s/{session}/".encode(), b"/v/", b"/c/")
                for entry in snapshot_of(socket, subtree).entries if entry.value]
    finally:
        socket.close(linger=0)
    return [key for key in keys if key.startswith(f"/s/{session}/") or key.endswith(f"/{session}")]


def test_movies_open_attach_and_close_a_session(movies, clients):
    first, second = clients(movies), clients(movies)
    opened = first.coordinator("coord.app", "openSession")
    session = opened.result["session"]
    assert "attached" not in opened.result and opened.nav_version == 0
    first.session = session
    first.follow()
    first.wait_for(lambda c: c.navigation is not None and c.navigation.version >= 1, WAIT, "the first navigation")

    attached = second.coordinator("coord.app", "openSession", session=session)
    assert attached.result["session"] == session and attached.result["attached"] == "true"
    assert attached.nav_version == first.navigation.version

    sign_in(first, **DEMO)  # states of two view models, coordinator instances of the main flow
    assert left_of(first, session)
    # §12 idle sessions: the record states the limit; `touch` keeps an open session.
    assert first.record is not None and first.record.idle_limit_seconds > 0
    second.session = session
    assert second.coordinator("coord.app", "touch").ok
    assert first.close_session().ok
    first.wait_for(lambda c: not c.follower.store, WAIT, "every key of the closed session deleted")
    # The flows' own records (/c/<flow>/<session>) go last: each parent finishes its children
    # in turn, one call after another.
    first.wait_for(lambda c: left_of(c, session) == [], WAIT, "every flow record of the closed session deleted")
    with pytest.raises(FlowError) as closed:
        second.coordinator("coord.app", "touch")
    assert closed.value.code == "INVALID_FIELD", closed.value


# --- the photos app (Plugins/Photos), with the same client --------------------------------------

# The photos app runs like the movies app: `flowbus up --app photos` finds it through the package's
# Plugins/apps.yaml, above the flowbus binary. Not built or not listed is a failure, never a skip.
def test_photos_log_in_like_a_photo_see_it_in_likes_log_out(start_host, context, clients):
    host = start_app(start_host, context, "photos")
    client = clients(host)
    client.open()

    # Welcome → Log in.
    client.wait_for(lambda c: shown()(c) and offered_matching(c, r"log\s*in|sign\s*in"), WAIT, "the Welcome screen")
    welcome = client.top
    client.act(offered_matching(client, r"log\s*in|sign\s*in"))
    client.wait_for(lambda c: shown()(c) and c.top.id != welcome.id and any(
        f.kind == KIND_SECRET for f in c.fields().values()), WAIT, "the Log in form")
    log_in = next(a for a in client.actions().values()
                  if not a.disabled and any(client.fields().get(f) is not None and
                                            client.fields()[f].kind == KIND_SECRET for f in a.fields))
    # The account is an e-mail: whatever the text field is called, it gets it.
    client.act(log_in, **fill(client, log_in.name, email="demo@photos.dev", password="photos123",
                              name="demo@photos.dev"))

    # Browse, presented full screen with tabs: open a photo of the Browse tab.
    client.wait_for(lambda c: c.navigation.root == c.navigation.RootKind.Value("ROOT_KIND_TABS") or
                    c.navigation.HasField("modal"), WAIT, "the Browse flow")
    tabs = [stack.tab for stack in client.navigation.stacks]
    browse_tab = next((t for t in tabs if re.search("browse", t, re.I)), None)
    if browse_tab and client.navigation.selected_tab != browse_tab:
        client.act("selectTab", tab=browse_tab)
    client.wait_for(lambda c: loaded()(c) and any(col.action and col.items for col in c.collections()), WAIT,
                    "a photo list")
    browse = client.top
    photos = selectable(client)
    photo = photos.items[0]
    client.select(photos, photo)
    client.wait_for(lambda c: loaded()(c) and c.top.id != browse.id, WAIT, f"the details of {photo.title or photo.id}")

    # Like it.
    like = next((b for b in client.buttons() if re.search(r"^like$", b.action, re.I)), None) or \
        offered_matching(client, r"^like$|^♡|(?<!un)like")
    assert like is not None, f"no like action: {client.describe()}"
    reply = client.act(like)
    assert reply.applied

    # Likes lists it.
    likes_tab = next((t for t in tabs if re.search("like", t, re.I)), None)
    assert likes_tab, f"no likes tab in {tabs}"
    client.act("selectTab", tab=likes_tab)
    client.wait_for(lambda c: loaded()(c) and c.navigation.selected_tab == likes_tab and any(
        item.id == photo.id for col in c.collections() for item in col.items), WAIT, f"{photo.id} in Likes")
    state = client.state()
    if state is not None and state.payload_kind:
        assert state.payload_kind.startswith("photos.v1."), state.payload_kind
        assert contains(client.payload(state), photo.id)

    # Log out, from whichever tab offers it: back to Welcome.
    for tab in [likes_tab] + [t for t in tabs if t != likes_tab]:
        if client.navigation.selected_tab != tab:
            client.act("selectTab", tab=tab)
            client.wait_for(lambda c: c.navigation.selected_tab == tab and loaded()(c), WAIT, f"the {tab} tab")
        log_out = offered_matching(client, r"log\s*out|sign\s*out")
        if log_out is not None:
            break
    assert log_out is not None, f"no tab offers logging out: {client.describe()}"
    client.act(log_out)
    client.wait_for(lambda c: c.top is not None and c.top.kind == welcome.kind, WAIT, "Welcome after logging out")
