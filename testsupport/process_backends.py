"""Python back ends that misbehave as processes, for tests/harness/test_backend_processes.py:
each is refinterp itself (`faulty_backends.Faulty`) until the case whose id contains
`TRIGGER`, where it hangs, exits, crashes or leaves a process behind. Named
`testsupport.process_backends:<Class>`.

A process they leave behind carries a marker in its command line (`sleep 31337.<n>`), so that
a test can look for it in /proc.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from typing import Any

from testsupport.faulty_backends import Faulty

TRIGGER = "leaky_alpha"  # nn.relu/leaky_alpha misbehaves; the other nn.relu cases pass


class _Misbehaving(Faulty):
    """refinterp, except that `misbehave()` runs in `run` for the case of TRIGGER."""

    def prepare(self, case: Any) -> Any:
        runner = super().prepare(case)
        if TRIGGER in case.id:
            runner.run = lambda inputs: self.misbehave()
        return runner

    def misbehave(self) -> Any:
        raise NotImplementedError


class Hang(_Misbehaving):
    def misbehave(self) -> Any:
        time.sleep(3600)


class Exit(_Misbehaving):
    """`os._exit(0)`: the process ends at once, without an answer."""

    def misbehave(self) -> Any:
        os._exit(0)


class SysExit(_Misbehaving):
    def misbehave(self) -> Any:
        sys.exit(5)


class Segfault(_Misbehaving):
    def misbehave(self) -> Any:
        ctypes.string_at(0)  # reads address 0: SIGSEGV


class LeavesProcess(_Misbehaving):
    """Starts a process of its own session (marker `sleep 31337.81`), then hangs."""

    def misbehave(self) -> Any:
        subprocess.Popen(["sleep", "31337.81"], start_new_session=True)
        time.sleep(3600)


class Noisy(_Misbehaving):
    """Floods stderr (with terminal escapes) and then crashes."""

    def misbehave(self) -> Any:
        sys.stderr.write("\x1b[31mred alert\x1b[0m\n")
        chunk = "x" * 1023 + "\n"
        for _ in range(2048):  # 2 MiB
            sys.stderr.write(chunk)
        sys.stderr.write("the last line\n")
        sys.stderr.flush()
        os._exit(3)
