"""Starts a real Flowbus host (`flowbus up`) for each test, on free loopback TCP ports, and stops it
afterwards, checking that it and every process it started are gone."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

try:
    import zmq
except ImportError as missing:  # a clear failure, never a skip: the suite is part of the product's tests
    raise ImportError("pyzmq is missing: run scripts/setup (pip install pyzmq pytest)") from missing

import mdp  # noqa: E402

# A parent may hand us a blocked signal mask (Foundation's Process on Linux passes on the spawning
# thread's mask, and the Swift test runner's threads block SIGTERM); children inherit it, so a host
# started from here would never see the SIGTERM this suite stops it with. Start every child clean.
signal.pthread_sigmask(signal.SIG_SETMASK, set())

REPO = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
START_DEADLINE = 20.0
STOP_DEADLINE = 10.0
# The MDP heartbeat interval, in seconds: the host is started with it (--heartbeat-ms) and our
# workers use it too, as 7/MDP asks ("agreed-upon intervals").
HEARTBEAT = float(os.environ.get("FLOWBUS_INTEROP_HEARTBEAT", "0.5"))
LIVENESS = 4
ECHO_PLUGIN = "  - {name: echo, command: flowbus-echo, restart: permanent}\n"


def flowbus_binary() -> Path:
    configured = os.environ.get("FLOWBUS_BIN")
    binary = Path(configured) if configured else REPO / ".build" / "debug" / "flowbus"
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.fail(f"no flowbus executable at {binary} (FLOWBUS_BIN={configured!r}): build first: swift build",
                    pytrace=False)
    return binary


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((LOOPBACK, port))
            return True
        except OSError:
            return False


def _any_free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def free_ports() -> tuple[int, int]:
    """A broker port, and a clone port P with P, P+1 and P+2 all free."""
    broker = _any_free_port()
    for _ in range(100):
        clone = _any_free_port()
        span = {clone, clone + 1, clone + 2}
        if broker not in span and clone + 2 < 65536 and all(_port_is_free(p) for p in span):
            return broker, clone
    pytest.fail("could not find three consecutive free TCP ports on 127.0.0.1 in 100 tries")


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after its closing ')'.
    return int(stat[stat.rindex(")") + 2:].split()[1])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            parent = _parent_of(int(entry))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry))
    found, frontier = set(), [root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def _in_session(sid: int) -> set[int]:
    members = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                members.add(int(entry))
    return members


@dataclass
class Host:
    process: subprocess.Popen
    run_dir: Path
    stderr_path: Path
    broker: str
    clone_port: int
    manifest: Path
    plugins: list[str]
    starter: object = None
    app: str | None = None

    @property
    def clone(self) -> str:
        return f"tcp://{LOOPBACK}:{self.clone_port}"

    def restart(self) -> "Host":
        """Stops this host (checking it stops cleanly) and starts a new one on the same ports."""
        _stop(self)
        return self.starter(self.plugins, ports=(int(self.broker.rsplit(":", 1)[1]), self.clone_port), app=self.app)

    def stderr(self) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError as error:
            return f"(could not read the host's stderr: {error})"
        return text[-6000:] if text else "(empty)"

    def describe(self) -> str:
        return (f"host pid {self.process.pid}, broker {self.broker}, clone tcp://{LOOPBACK}:{self.clone_port}, "
                f"run dir {self.run_dir}\n--- host stderr ---\n{self.stderr()}")


def _write_manifest(directory: Path, plugins: list[str]) -> Path:
    manifest = directory / "manifest.yaml"
    if plugins:
        lines = "".join(ECHO_PLUGIN if p == "echo" else p for p in plugins)
        manifest.write_text("plugins:\n" + lines)
    else:
        manifest.write_text("plugins: []\n")
    return manifest


def _wait_until_serving(host: Host, context: zmq.Context) -> None:
    """Up means the broker answers 8/MMI: even a "404" for an unknown service proves it."""
    deadline = time.monotonic() + START_DEADLINE
    client = mdp.Client(context, host.broker, timeout=0.5, retries=0)
    try:
        while True:
            if host.process.poll() is not None:
                pytest.fail(f"flowbus up exited with status {host.process.returncode} before its broker "
                            f"answered mmi.service\n{host.describe()}", pytrace=False)
            try:
                status = client.service_status("interop.nobody")
                if status in (b"200", b"404"):
                    return
                pytest.fail(f"mmi.service answered {status!r}, expected b'404' for an unknown service\n"
                            f"{host.describe()}", pytrace=False)
            except mdp.NoReply:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the broker did not answer mmi.service within {START_DEADLINE} s\n"
                            f"{host.describe()}", pytrace=False)
    finally:
        client.close()


def _stop(host: Host) -> None:
    pid = host.process.pid
    if host.process.poll() is not None:
        pytest.fail(f"flowbus up exited on its own during the test, with status {host.process.returncode}\n"
                    f"{host.describe()}", pytrace=False)
    family = descendants(pid)
    host.process.send_signal(signal.SIGTERM)
    try:
        host.process.wait(STOP_DEADLINE)
    except subprocess.TimeoutExpired:
        for child in family | descendants(pid):
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        host.process.kill()
        host.process.wait()
        pytest.fail(f"flowbus up did not exit within {STOP_DEADLINE} s of SIGTERM; killed it\n{host.describe()}",
                    pytrace=False)
    # Children die with the host; allow a moment for the kernel to reap them.
    deadline = time.monotonic() + 2.0
    left = set()
    while time.monotonic() < deadline:
        left = {p for p in family if _alive(p)} | _in_session(pid)
        if not left:
            break
        time.sleep(0.05)
    if left:
        names = {p: Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                 for p in left if _alive(p)}
        for child in left:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        pytest.fail(f"processes of the host outlived it after SIGTERM: {names}\n{host.describe()}", pytrace=False)
    if host.process.returncode != 0:
        pytest.fail(f"flowbus up exited with status {host.process.returncode} after SIGTERM (expected 0)\n"
                    f"{host.describe()}", pytrace=False)


@pytest.fixture
def context():
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


@pytest.fixture
def start_host(context):
    """`start_host(plugins=["echo"])` starts `flowbus up` on a manifest of those plugins;
    `start_host(app="movies")` starts an app of the package's Plugins/apps.yaml instead (`--app`, no
    manifest). Every host started is stopped after the test."""
    started: list[Host] = []
    directories: list[Path] = []

    def start(plugins: list[str] | None = None, ports: tuple[int, int] | None = None,
              app: str | None = None) -> Host:
        run_dir = Path(tempfile.mkdtemp(prefix="fbi-", dir="/tmp"))
        directories.append(run_dir)
        manifest = _write_manifest(run_dir, plugins or [])
        chosen = ["--app", app] if app else ["--manifest", str(manifest)]
        broker_port, clone_port = ports or free_ports()
        stderr_path = run_dir / "host.stderr"
        # --open: these peers register as workers, write Clone keys and read every session over
        # tcp, as the zguide's reference peers do; a closed host refuses all of that to tcp peers
        # (Protocols/README.md §10, tested by ClosedBusEndToEndTests).
        command = [str(flowbus_binary()), "up", "--open", "--run-dir", str(run_dir / "run"),
                   "--broker", f"tcp://{LOOPBACK}:{broker_port}",
                   "--clone", f"tcp://{LOOPBACK}:{clone_port}",
                   *chosen, "--heartbeat-ms", str(int(HEARTBEAT * 1000))]
        with open(stderr_path, "wb") as stderr, open(run_dir / "host.stdout", "wb") as stdout:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                       start_new_session=True)
        host = Host(process, run_dir, stderr_path, f"tcp://{LOOPBACK}:{broker_port}", clone_port, manifest,
                    plugins or [], start, app)
        started.append(host)
        _wait_until_serving(host, context)
        return host

    yield start
    failures = []
    for host in reversed(started):
        if host.process.returncode is not None:
            continue  # already stopped and checked by restart()
        try:
            _stop(host)
        except pytest.fail.Exception as failure:
            failures.append(str(failure))
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


@pytest.fixture
def host(start_host) -> Host:
    return start_host()


@pytest.fixture
def client(context, host):
    client = mdp.Client(context, host.broker, timeout=2.0, retries=2)
    yield client
    client.close()
