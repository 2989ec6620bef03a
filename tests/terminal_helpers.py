"""Run ``yiji`` on a pseudo-terminal, as a person at a terminal would (for what only a terminal shows or
sends: Ctrl-C, notices written only when standard error is a terminal)."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Terminal:
    """A ``python -m yiji`` child whose standard input, output and error are one pseudo-terminal."""

    pid: int
    fd: int
    output: bytearray = field(default_factory=bytearray)
    status: int | None = None

    @classmethod
    def start(cls, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Terminal:
        pid, fd = pty.fork()
        if pid == 0:  # the child: a new session whose controlling terminal is the pty
            try:
                if cwd is not None:
                    os.chdir(cwd)
                # as a shell starts a command in the foreground: Ctrl-C not ignored, whatever this test
                # process inherited (a suite started in the background ignores SIGINT, and exec keeps that)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
                os.execve(
                    sys.executable, [sys.executable, "-m", "yiji", *args], {**os.environ, **(env or {})}
                )
            finally:
                os._exit(127)
        return cls(pid, fd)

    def read_until(self, wanted: bytes, seconds: float) -> bool:
        """Read output until ``wanted`` appears (True) or ``seconds`` pass or the output ends (False)."""
        deadline = time.monotonic() + seconds
        while wanted not in self.output:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                return wanted in self.output
        return True

    def _read(self, seconds: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], min(seconds, 0.5))
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.output += chunk
        return bool(chunk)

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    def wait(self, seconds: float) -> int | None:
        """The exit code once the child ends within ``seconds`` (-N for a signal N), else ``None``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.status = os.waitstatus_to_exitcode(status)
                self._drain()
                return self.status
            self._read(0.1)
        return None

    def _drain(self) -> None:
        while self._read(0.05) and select.select([self.fd], [], [], 0)[0]:
            pass

    def text(self) -> str:
        return self.output.decode("utf-8", "replace")

    def close(self) -> None:
        """Stop the child if it still runs (it was started here) and close the terminal."""
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.fd)
