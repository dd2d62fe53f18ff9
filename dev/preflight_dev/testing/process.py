"""Supervised child processes that never outlive the harness.

Four layers, because any one can be bypassed:
- each component runs in its own process group, and stop() signals the whole group;
- an atexit hook stops whatever is still running when the interpreter exits normally
  (including after an uncaught exception or Ctrl-C);
- on Linux the kernel sends SIGKILL to a component when the thread that started it dies
  (PR_SET_PDEATHSIG), which covers `kill -9` of the Python process;
- a work directory records its owner's pid and its components' pids, so the next start
  reaps what an earlier, killed run left behind (see reap_stale_workdirs).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import IO

WORKDIR_PREFIX = "vllm-preflight-k8s-"
OWNER_FILE = "owner.pid"
PIDS_FILE = "component.pids"
_PR_SET_PDEATHSIG = 1


def _pdeathsig_setter() -> Callable[[], None] | None:
    """A preexec_fn asking the kernel to SIGKILL the child when its parent thread dies.

    libc and prctl are looked up here, before any fork, so between fork and exec the
    child does no imports or lookups, only this one foreign call: Python documents
    preexec_fn as risky when other threads exist, and this keeps that risk minimal.
    """
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    prctl = libc.prctl

    def set_pdeathsig() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return set_pdeathsig


_PREEXEC = _pdeathsig_setter()


def free_ports(count: int) -> list[int]:
    """Distinct loopback ports nobody listens on right now. All are held open until all
    are chosen, so none repeats; the caller retries if it loses a race for one later."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def port_is_listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def pid_alive(pid: int) -> bool:
    """True while the pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            # Field 3 (after the parenthesised command, which may hold spaces) is the state.
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        # No procfs (macOS): fall back to signal 0, which counts zombies as alive.
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def tail(path: Path, lines: int = 40) -> str:
    try:
        with path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 64 * 1024))
            text = log.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


class Component:
    """One long-running binary with its output in a log file."""

    def __init__(
        self, name: str, argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError(f"{self.name} was never started")
        return self._proc.pid

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self._proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,  # its own process group: stop() kills it whole
            preexec_fn=_PREEXEC,  # noqa: PLW1509 - one prctl call, looked up before fork
            close_fds=True,
        )
        _LIVE.add(self)

    def returncode(self) -> int | None:
        """None while running."""
        return None if self._proc is None else self._proc.poll()

    def log_tail(self, lines: int = 40) -> str:
        return tail(self.log_path, lines)

    def terminate(self) -> None:
        """SIGTERM to the group without waiting (stop() waits), to stop several at once."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGTERM)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM to the group, SIGKILL after `grace` seconds, then SIGKILL the group
        again before reaping the leader (its zombie keeps the group id from being reused),
        so no straggler in the group survives."""
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                if not _wait_exited(proc.pid, grace):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    _wait_exited(proc.pid, 10.0)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            _LIVE.discard(self)
            if self._log is not None:
                self._log.close()


def _wait_exited(pid: int, timeout: float) -> bool:
    """Waits for `pid` (our child) to exit without reaping it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True  # already reaped
        if info is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


_LIVE: set[Component] = set()


@atexit.register
def _stop_leftovers() -> None:
    for component in list(_LIVE):
        component.stop(grace=5.0)


def make_workdir(parent: Path | None = None) -> Path:
    workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=parent))
    (workdir / OWNER_FILE).write_text(f"{os.getpid()}\n", encoding="ascii")
    return workdir


def record_pids(workdir: Path, pids: Sequence[int]) -> None:
    (workdir / PIDS_FILE).write_text("".join(f"{p}\n" for p in pids), encoding="ascii")


def _read_pids(path: Path) -> list[int]:
    try:
        return [int(x) for x in path.read_text(encoding="ascii").split()]
    except (OSError, ValueError):
        return []


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def mounts_under(path: Path) -> list[str]:
    """Mount points strictly inside ``path``, deepest first (from /proc/self/mountinfo,
    whose octal escapes, such as a space as \\040, are undone)."""
    prefix = str(path).rstrip("/") + "/"
    try:
        lines = Path("/proc/self/mountinfo").read_text(errors="replace").splitlines()
    except OSError:
        return []
    points = []
    for line in lines:
        fields = line.split()
        if len(fields) > 4:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            if point.startswith(prefix):
                points.append(point)
    return sorted(set(points), key=lambda p: (p.count("/"), p), reverse=True)


def unmount_under(path: Path) -> None:
    """Lazily unmounts everything mounted inside ``path`` (a real node's container root
    filesystems and volumes, debootstrap's /proc), so that removing ``path`` never
    descends into a mounted file system."""
    for point in mounts_under(path):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def reap_stale_workdirs(parent: Path | None = None) -> list[Path]:
    """Removes work directories whose owning process is gone, first killing any component
    still running from them. A pid is only killed if its command line names that work
    directory, so a recycled pid never hits an unrelated process."""
    root = Path(parent or tempfile.gettempdir())
    reaped = []
    for workdir in root.glob(WORKDIR_PREFIX + "*"):
        owners = _read_pids(workdir / OWNER_FILE)
        if not owners or pid_alive(owners[0]):
            continue
        for pid in _read_pids(workdir / PIDS_FILE):
            if str(workdir) in _cmdline(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        unmount_under(workdir)  # a real node's mounts (realnode.py)
        shutil.rmtree(workdir, ignore_errors=True)
        reaped.append(workdir)
    return reaped


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def signals_as_keyboard_interrupt(
    signums: Sequence[int] = (signal.SIGTERM, signal.SIGHUP),
) -> Iterator[None]:
    """Turns SIGTERM/SIGHUP into KeyboardInterrupt, so `with`/`finally` blocks (and thus
    stop()) run the same way as on Ctrl-C. Only replaces default handlers, and only in the
    main thread (Python allows nothing else): someone else's handler wins."""
    saved: dict[int, signal.Handlers | int | Callable[[int, FrameType | None], object] | None]
    saved = {}
    if threading.current_thread() is threading.main_thread():
        for signum in signums:
            if signal.getsignal(signum) == signal.SIG_DFL:
                saved[signum] = signal.signal(signum, _interrupt)
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
