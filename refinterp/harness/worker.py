"""A child process that answers requests one at a time (docs/harness.md, "Processes"): a
Python back end runs in one (`backends.IsolatedBackend`), and `-j N` checks cases in N
(`suite_run`).

A worker is started with multiprocessing's `spawn` context (a fresh interpreter: none of the
parent's threads, locks or state) and makes itself a session leader, so that killing its
process group ends everything it started, and a Ctrl-C at the terminal reaches only the
harness, which decides. `serve(argument)` runs first in the child and gives
`(handler, info)`: `info` is the worker's first message, then every request is answered by
`handler(request)`. A worker that dies, or does not answer in time (it is then killed),
raises `WorkerGone`; what it wrote to stdout and stderr can be captured (bounded,
`processes.Capture`) to explain a crash.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import signal
import sys
import time
from multiprocessing.connection import wait
from typing import Any, Callable

from refinterp.harness import processes

CONTEXT = "spawn"
EXIT_SECONDS = 1.0  # for a child whose connection closed to end on its own


class WorkerGone(Exception):
    """The worker ended (`detail`: how, 'exit status 5') or was killed after `timeout`
    seconds (`timed_out`; 'no result within 3 s') before it answered; `output`: what it wrote
    meanwhile when captured."""

    def __init__(self, detail: str, output: str = "", timed_out: bool = False) -> None:
        super().__init__(detail)
        self.detail, self.output, self.timed_out = detail, output, timed_out


class WorkerFailed(Exception):
    """`serve(argument)` raised in the child: `kind` is the exception's class name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


class Worker:
    """One child process serving requests; see the module docstring."""

    def __init__(self, serve: Callable[[Any], tuple[Callable[[Any], Any], Any]],
                 argument: Any = None, *, capture: bool = False) -> None:
        self.serve, self.argument, self.capture = serve, argument, capture
        self.process: Any = None
        self.connection: Any = None
        self._reader: Any = None
        self.busy = False  # a request was sent and not answered
        self.output = processes.Capture()

    # ------------------------------------------------------------------ life

    def launch(self) -> None:
        """Start the child (without waiting for it to be ready)."""
        context = multiprocessing.get_context(CONTEXT)
        ours, theirs = context.Pipe()
        reader, writer = context.Pipe(duplex=False) if self.capture else (None, None)
        process = context.Process(target=_main, args=(theirs, writer, self.serve,
                                                      self.argument),
                                  name="refinterp-worker")
        process.start()
        theirs.close()
        if writer is not None:
            writer.close()
            os.set_blocking(reader.fileno(), False)
        self.process, self.connection, self._reader = process, ours, reader
        processes.register_worker(process.pid, self.close)

    def start(self, timeout: float) -> Any:
        """Launch the child and wait until `serve` has run: its `info`. Raises WorkerFailed
        (serve raised) or WorkerGone (the child died or took longer than `timeout`)."""
        self.launch()
        return self.ready(timeout)

    def ready(self, timeout: float) -> Any:
        """Wait for a launched child's first message (see `start`)."""
        kind, *rest = self.receive(timeout)
        if kind == "failed":
            self.close()
            raise WorkerFailed(*rest)
        return rest[0]

    @property
    def alive(self) -> bool:
        return self.process is not None and not processes.exited(self.process.pid)

    @property
    def waitables(self) -> list[Any]:
        """What `multiprocessing.connection.wait` watches for this worker's answer or end."""
        return [self.connection, self.process.sentinel]

    def terminate(self) -> None:
        """Ask the child to stop (SIGTERM: it cleans up what it started, then ends)."""
        if self.process is not None:
            try:
                os.kill(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def wait_exit(self, timeout: float) -> None:
        """Wait up to `timeout` s for the child to end (it is not reaped)."""
        if self.process is not None:
            wait([self.process.sentinel], timeout)

    def kill(self) -> None:
        """Kill the child's whole process group at once, reap it, and sweep the orphans."""
        if self.process is None:
            return
        processes.kill_group(self.process.pid)
        self.process.join()
        self._forget()
        processes.sweep()

    def close(self, grace: float = 1.0) -> None:
        """Stop the child: an idle one is asked first (it ends its own workers) and killed
        after `grace` s; a busy one (interrupted while it works) is killed at once."""
        if self.process is None:
            return
        if not self.busy:
            try:
                self.connection.send(None)
            except (OSError, ValueError):
                pass
            self.wait_exit(grace)
        self.kill()

    def _forget(self) -> None:
        if self._reader is not None:
            self.output.read_from(self._reader.fileno())
            self._reader.close()
        self.connection.close()
        processes.unregister_worker(self.process.pid)
        self.process.close()
        self.process = self.connection = self._reader = None

    # ------------------------------------------------------------------ requests

    def call(self, request: Any, timeout: float | None) -> Any:
        """Send a request and wait for its answer (see `receive`); the output captured is that
        of this request."""
        self.output.reset()
        self.send(request)
        return self.receive(timeout)

    def send(self, request: Any) -> None:
        self.busy = True
        try:
            self.connection.send(request)
        except (OSError, ValueError):  # it died: receive() says how
            pass

    def receive(self, timeout: float | None) -> Any:
        """The child's next message. Raises WorkerGone when it ends first, or when `timeout`
        seconds pass (it is then killed, with its process group)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        watched = [self.connection, self.process.sentinel]
        if self._reader is not None:
            watched.append(self._reader)
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self.kill()
                raise WorkerGone(f"no result within {timeout:g} s", self.output.text(),
                                 timed_out=True)
            ready = wait(watched, left)
            if self._reader is not None and self._reader in ready:
                if not self.output.read_from(self._reader.fileno()):
                    watched.remove(self._reader)
            if self.connection in ready or (self.process.sentinel in ready and
                                            self.connection.poll()):
                try:
                    message = self.connection.recv()
                    self.busy = False
                    return message
                except (EOFError, OSError):
                    pass
            elif self.process.sentinel not in ready:
                continue
            self._gone()

    def _gone(self) -> None:
        """The child ended (or is ending: its connection closed): kill what is left of its
        group, reap it, raise WorkerGone."""
        pid = self.process.pid
        wait([self.process.sentinel], EXIT_SECONDS)  # ends on its own: its own exit status
        processes.kill_group(pid)
        self.process.join()
        status = self.process.exitcode
        self._forget()
        processes.sweep()
        raise WorkerGone(processes.describe_status(status), self.output.text())


def _main(connection: Any, output: Any, serve: Callable[[Any], Any], argument: Any) -> None:
    """The child: a session of its own, output to the capture pipe, then serve requests until
    told to stop (None) or the parent goes away."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _interrupt)
    if output is not None:
        os.dup2(output.fileno(), 1)
        os.dup2(output.fileno(), 2)
        output.close()
        sys.stdout.reconfigure(line_buffering=True)
        faulthandler.enable()  # a crash's Python traceback goes to the capture
    try:
        try:
            handler, info = serve(argument)
        except Exception as error:  # noqa: BLE001 - reported to the parent
            connection.send(("failed", type(error).__name__, str(error)))
            return
        connection.send(("ready", info))
        while True:
            try:
                request = connection.recv()
            except (EOFError, OSError):
                return
            if request is None:
                return
            reply = handler(request)
            try:
                connection.send(reply)
            except Exception as error:  # noqa: BLE001 - an answer that cannot be sent
                connection.send(("error", f"the answer cannot be sent to the harness: "
                                          f"{type(error).__name__}: {error}"))
    except processes.Interrupted:
        return
    finally:
        processes.stop_workers()


def _interrupt(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise processes.Interrupted(signum)
