"""Keeping a back end's processes inside the harness (docs/harness.md, "Processes").

A back end may start processes that outlive it: `(sleep 100 &)`, `setsid daemon &`, a Python
back end's helper. While a harness run is active (`scope()`), the harness process is a Linux
*child subreaper*, so every orphan of what it started is re-parented to it instead of to init;
`sweep()` then kills and reaps every child it did not start on purpose, with everything below
them. `Capture` keeps a bounded part of a back end's output, and `printable` escapes control
characters before the text reaches a terminal or a report. `interruptible()` turns SIGINT and
SIGTERM into `Interrupted`, so that every `finally` cleans up before the process ends.

Nothing here knows about golden cases: it is process plumbing, used by `backends`, `worker`
and `suite_run`. Where a facility is missing (no /proc, no prctl) it is skipped quietly.
"""

from __future__ import annotations

import atexit
import ctypes
import multiprocessing
import os
import re
import signal
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
SWEEP_SECONDS = 2.0   # how long a sweep keeps killing orphans that are still appearing
HEAD = TAIL = 32 * 1024  # bytes of a back end's output kept: the first and the last
LIMIT = HEAD + TAIL
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # every control but \t and \n

_LOCK = threading.RLock()
_depth = 0                       # nesting of scope()
_before: set[int] = set()        # children the outermost scope found (not ours to kill)
_previous_reaper: bool | None = None
_protected: set[int] = set()     # processes started on purpose and still managed
_stoppers: dict[int, Callable[[], None]] = {}  # live workers: how to stop each one


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived (`interruptible`): unwind, clean up, exit 128 + signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def status(self) -> int:
        """The conventional exit status: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum


# --------------------------------------------------------------------------- subreaper


def _prctl() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def _set_subreaper(on: bool) -> bool | None:
    """Set this process's child-subreaper flag; its previous value, or None where the system
    has none (not Linux)."""
    prctl = _prctl()
    if prctl is None:
        return None
    value = ctypes.c_int(0)
    if prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0) != 0:
        return None
    if prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        return None
    return bool(value.value)


@contextmanager
def scope() -> Iterator[None]:
    """A harness run: this process is a child subreaper meanwhile, and at the end every
    process it did not start on purpose is killed (`sweep`). Nested scopes are one scope; the
    outermost restores the subreaper flag as it was."""
    global _depth, _before, _previous_reaper
    with _LOCK:
        _depth += 1
        if _depth == 1:
            _before = set(_children(_table()))
            _previous_reaper = _set_subreaper(True)
    try:
        yield
    finally:
        with _LOCK:
            try:
                if _depth == 1:
                    sweep()
                    if _previous_reaper is not None:
                        _set_subreaper(_previous_reaper)
            finally:
                _depth -= 1


# --------------------------------------------------------------------------- finding and killing


def _table() -> dict[int, int]:
    """pid -> parent pid of every process /proc shows ({} without /proc)."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            table[int(name)] = int(fields[1])  # after "pid (comm)": state, ppid, ...
        except (OSError, IndexError, ValueError):
            continue  # it ended meanwhile
    return table


def _children(table: dict[int, int], parent: int | None = None) -> list[int]:
    parent = os.getpid() if parent is None else parent
    return [pid for pid, ppid in table.items() if ppid == parent]


def _subtrees(roots: list[int], table: dict[int, int]) -> list[int]:
    """The roots and every process below them."""
    below: dict[int, list[int]] = {}
    for pid, ppid in table.items():
        below.setdefault(ppid, []).append(pid)
    found, stack = [], list(roots)
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(below.get(pid, ()))
    return found


def _helpers() -> set[int]:
    """multiprocessing's own helper processes (resource tracker, fork server): not orphans."""
    pids = set()
    from multiprocessing import forkserver, resource_tracker

    for owner, attribute in ((resource_tracker._resource_tracker, "_pid"),
                             (forkserver._forkserver, "_forkserver_pid")):
        pid = getattr(owner, attribute, None)
        if isinstance(pid, int):
            pids.add(pid)
    return pids


def _kept() -> set[int]:
    """Children that are not orphans: there before the scope, started on purpose and still
    managed, or multiprocessing's."""
    active = {p.pid for p in multiprocessing.active_children() if p.pid}
    return _before | _protected | _helpers() | active


def protect(pid: int) -> None:
    """`pid` was started on purpose: no sweep kills it until `release(pid)`."""
    with _LOCK:
        _protected.add(pid)


def release(pid: int) -> None:
    with _LOCK:
        _protected.discard(pid)


def kill_group(pid: int) -> None:
    """SIGKILL to the process group (session) led by `pid`; to `pid` alone when it leads none
    yet (a child killed before its setsid)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    except PermissionError:
        pass


def exited(pid: int) -> bool:
    """Whether the child `pid` has ended, without reaping it (its pid stays reserved, so that
    its process group can still be killed safely)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def sweep() -> int:
    """Kill (SIGKILL) and reap every child of this process that it did not start on purpose
    — orphans a back end left, re-parented here — with everything below them; repeated until
    none is left (a killed process's own children arrive a moment later) or SWEEP_SECONDS
    pass. Outside `scope()` nothing is done: the children are then not the harness's to
    judge. The number of processes killed."""
    killed, deadline = 0, time.monotonic() + SWEEP_SECONDS
    while True:
        with _LOCK:
            if _depth == 0:
                return killed
            table = _table()
            kept = _kept()
            roots = [pid for pid in _children(table) if pid not in kept]
            if not roots:
                return killed
            for pid in _subtrees(roots, table):
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except (ProcessLookupError, PermissionError):
                    pass
            for pid in roots:
                _reap(pid)
        if time.monotonic() > deadline:
            return killed
        time.sleep(0.002)


def describe_status(status: int | None) -> str:
    """'exit status 1' or 'killed by signal 11 (SIGSEGV)' for a `returncode`-style status."""
    if status is None:
        return "no exit status"
    if status < 0:
        try:
            name = f" ({signal.Signals(-status).name})"
        except ValueError:
            name = ""
        return f"killed by signal {-status}{name}"
    return f"exit status {status}"


# --------------------------------------------------------------------------- workers


def register_worker(pid: int, stop: Callable[[], None]) -> None:
    """A long-lived helper process (a `worker.Worker`): protected from sweeps, stopped by
    `stop_workers()` and at exit."""
    with _LOCK:
        _protected.add(pid)
        _stoppers[pid] = stop


def unregister_worker(pid: int) -> None:
    with _LOCK:
        _protected.discard(pid)
        _stoppers.pop(pid, None)


def stop_workers() -> None:
    """Stop every live worker of this process (their own cleanup kills what they started)."""
    with _LOCK:
        stoppers = list(_stoppers.values())
    for stop in stoppers:
        stop()


atexit.register(stop_workers)


# --------------------------------------------------------------------------- signals


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT and SIGTERM raise `Interrupted` in the main thread (once: a second signal
    during the cleanup is ignored, so that the cleanup finishes); the handlers as they were
    afterwards. Only in the main thread (elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.getsignal(signum) for signum in wanted}

    def handler(signum: int, frame: Any) -> None:
        for other in wanted:
            signal.signal(other, signal.SIG_IGN)
        raise Interrupted(signum)

    for signum in wanted:
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)


# --------------------------------------------------------------------------- output


class Capture:
    """A back end's output, kept bounded while it is read: the first HEAD and the last TAIL
    bytes, and how many were left out between them."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.head, self.tail, self.total = bytearray(), bytearray(), 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = HEAD - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > TAIL:
                del self.tail[:len(self.tail) - TAIL]

    def read_from(self, fd: int) -> bool:
        """Read what `fd` (non-blocking) holds now; False at end of file."""
        while True:
            try:
                data = os.read(fd, 65536)
            except (BlockingIOError, InterruptedError):
                return True
            if not data:
                return False
            self.feed(data)

    def text(self) -> str:
        """The kept bytes as printable text, with a marker where bytes were left out."""
        left_out = self.total - len(self.head) - len(self.tail)
        marker = f"\n[… {left_out} bytes left out …]\n" if left_out else ""
        return escape(_decode(bytes(self.head))) + marker + escape(_decode(bytes(self.tail)))


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n")


def printable(text: str, limit: int = LIMIT) -> str:
    """`text` safe for a terminal, JSON and XML: at most `limit` characters (the first and the
    last half, a marker between), control characters escaped (`escape`)."""
    if len(text) > limit:
        half = limit // 2
        text = (text[:half] + f"\n[… {len(text) - 2 * half} characters left out …]\n" +
                text[-half:])
    return escape(text)


def escape(text: str) -> str:
    """Every control character but newline and tab as `\\xHH` (`\\x1b`): no terminal escape
    sequence, carriage return or NUL reaches a terminal or a report."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)
