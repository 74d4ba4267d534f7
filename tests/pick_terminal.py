"""``xcsh-store pick`` driven in a real terminal (a pty, through pexpect) as a person drives
it, with what the terminal shows kept by a terminal emulator (pyte): tests wait for the screen
to show something, never for a time. Its stdout is a file, as in ``$(xcsh-store pick)``: the
picker draws on /dev/tty, the pty."""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pexpect
import pyte

# Generous: the machine is shared, and a test only waits this long when it is failing.
TIMEOUT = 60.0
SGR = re.compile(rb"\x1b\[([0-9;:]*)m")
# The SGR parameters that set a colour (foreground, background, bright; 38/48 take values).
COLOUR_PARAMETERS = {*range(30, 50), *range(90, 98), *range(100, 108)}


def colour_sequences(raw: bytes) -> list[bytes]:
    """The SGR sequences in ``raw`` that set or reset a colour."""
    return [
        match.group()
        for match in SGR.finditer(raw)
        if any(
            part.isdigit() and int(part) in COLOUR_PARAMETERS
            for part in re.split(rb"[;:]", match.group(1))
        )
    ]


class PickTerminal:
    """One run of ``xcsh-store pick ARGS`` in a ``rows`` x ``columns`` terminal."""

    def __init__(
        self,
        args: Sequence[str],
        stdout: Path,
        rows: int = 24,
        columns: int = 80,
        environment: Mapping[str, str] | None = None,
    ):
        env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
        env.pop("NO_COLOR", None)
        env |= {"TERM": "xterm-256color", **(environment or {})}
        command = str(Path(sys.executable).with_name("xcsh-store"))
        self.stdout = stdout
        self.raw = bytearray()
        self.screen = pyte.Screen(columns, rows)
        self._stream = pyte.ByteStream(self.screen)
        # bash only sends stdout to the file; exec leaves xcsh-store as the child.
        self.child = pexpect.spawn(
            "bash",
            ["-c", 'exec "$@" > "$0"', str(stdout), command, "pick", *args],
            env=env,
            dimensions=(rows, columns),
        )

    def text(self) -> str:
        """The screen as lines of text."""
        return "\n".join(line.rstrip() for line in self.screen.display)

    def _read(self, timeout: float) -> bool:
        """Feed what the program wrote within ``timeout`` to the screen; False at its end."""
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.raw += data
        self._stream.feed(data)
        return True

    def wait_until(self, shows: Callable[[str], bool], what: str) -> str:
        """The screen once ``shows(screen text)`` holds; fails after TIMEOUT saying ``what``
        was awaited and what the screen showed."""
        deadline = time.monotonic() + TIMEOUT
        while not shows(self.text()):
            if time.monotonic() > deadline or not self._read(0.2):
                raise AssertionError(f"the screen never showed {what}:\n{self.text()}")
        return self.text()

    def wait_for(self, text: str) -> str:
        return self.wait_until(lambda screen: text in screen, repr(text))

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def resize(self, rows: int, columns: int) -> None:
        """The window resized: the emulator's screen, then the pty (which signals SIGWINCH)."""
        self.screen.resize(rows, columns)
        self.child.setwinsize(rows, columns)

    def finish(self) -> tuple[int, str]:
        """Its exit code and what it printed on stdout, once it has ended."""
        deadline = time.monotonic() + TIMEOUT
        while self._read(0.2):
            if time.monotonic() > deadline:
                raise AssertionError(f"pick did not end:\n{self.text()}")
        self.child.close()
        return self.child.exitstatus, self.stdout.read_text(encoding="utf-8")

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)
