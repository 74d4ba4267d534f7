"""``xcsh-store pick`` (or a shell that runs it) driven in a real terminal (a pty, through
pexpect) as a person drives it, with what the terminal shows kept by a terminal emulator
(pyte): tests wait for the screen to show something, never for a time. The picker's stdout is
a file, as in ``$(xcsh-store pick)``: it draws on /dev/tty, the pty."""

from __future__ import annotations

import copy
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

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


XCSH_STORE = str(Path(sys.executable).with_name("xcsh-store"))
# xterm's alternate screen, which full-screen programs draw on.
ALTERNATE_SCREEN = 1049


class Screen(pyte.Screen):
    """pyte's screen with xterm's alternate screen: what was shown before a full-screen
    program started is shown again once it leaves, as a terminal does."""

    def __init__(self, columns: int, lines: int):
        super().__init__(columns, lines)
        self.main: tuple[Any, Any] | None = None

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private") and ALTERNATE_SCREEN in modes:
            self.main = (copy.deepcopy(self.buffer), copy.copy(self.cursor))
            self.erase_in_display(2)
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private") and ALTERNATE_SCREEN in modes and self.main is not None:
            self.buffer, self.cursor = self.main
            self.main = None
            self.dirty.update(range(self.lines))
        super().reset_mode(*modes, **kwargs)


class Terminal:
    """A program run in a ``rows`` x ``columns`` terminal (TERM xterm-256color, no NO_COLOR
    unless ``environment`` sets it, the tests' isolated environment otherwise)."""

    def __init__(
        self,
        command: Sequence[str],
        rows: int = 24,
        columns: int = 80,
        environment: Mapping[str, str] | None = None,
    ):
        env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
        env.pop("NO_COLOR", None)
        env |= {"TERM": "xterm-256color", **(environment or {})}
        self.raw = bytearray()
        self.screen = Screen(columns, rows)
        self._stream = pyte.ByteStream(self.screen)
        self.child = pexpect.spawn(
            command[0], list(command[1:]), env=env, dimensions=(rows, columns)
        )

    def lines(self) -> list[str]:
        """The screen's lines, without the spaces that end them."""
        return [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        """The screen as text, a line of it per row."""
        return "\n".join(self.lines())

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

    def wait_for_end(self) -> int:
        """Its exit code, once it has ended."""
        deadline = time.monotonic() + TIMEOUT
        while self._read(0.2):
            if time.monotonic() > deadline:
                raise AssertionError(f"the program did not end:\n{self.text()}")
        self.child.close()
        return self.child.exitstatus

    def runs_a_command(self) -> bool:
        """Whether the program (a shell) has a child process: a command (its key binding's
        picker) that may still read what is typed."""
        tasks = Path(f"/proc/{self.child.pid}/task")
        return any((task / "children").read_text().strip() for task in tasks.iterdir())

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


class PickTerminal(Terminal):
    """``xcsh-store pick ARGS`` in a terminal, its stdout a file (as in ``$(…)``)."""

    def __init__(self, args: Sequence[str], stdout: Path, rows: int = 24, columns: int = 80,
                 environment: Mapping[str, str] | None = None,
                 global_options: Sequence[str] = ()):  # fmt: skip
        self.stdout = stdout
        # bash only sends stdout to the file; exec leaves xcsh-store as the child.
        command = ["bash", "-c", 'exec "$@" > "$0"', str(stdout), XCSH_STORE, *global_options]
        super().__init__([*command, "pick", *args], rows, columns, environment)

    def finish(self) -> tuple[int, str]:
        """Its exit code and what it printed on stdout, once it has ended."""
        return self.wait_for_end(), self.stdout.read_text(encoding="utf-8")
