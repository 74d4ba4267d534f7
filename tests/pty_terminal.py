"""The installed ``xcsh-store`` run in a real terminal (a pty of a given width), as a user runs
it: stdout and stderr are that terminal, so ``--color auto`` colours and the window size is the
terminal's. Tests that check what a terminal shows use it; piped output is another case."""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path

ROWS = 40


def run_in_pty(
    args: Sequence[str],
    width: int,
    environment: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[int, str]:
    """The exit code of ``xcsh-store ARGS`` in a terminal of ``width`` columns (TERM
    xterm-256color, no NO_COLOR, no COLUMNS: the window size says it), and what it showed, with
    line ends as written. ``environment`` is added to this process's (the tests' isolated one)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, width, 0, 0))
    attributes = termios.tcgetattr(follower)
    attributes[1] &= ~termios.OPOST  # keep "\n" as written (no "\r\n")
    termios.tcsetattr(follower, termios.TCSANOW, attributes)
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    env.pop("NO_COLOR", None)
    env |= {"TERM": "xterm-256color", **(environment or {})}
    command = [str(Path(sys.executable).with_name("xcsh-store")), *args]
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env, cwd=cwd
    ) as child:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError as error:  # EIO: the child closed the terminal
                if error.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = child.wait()
    os.close(leader)
    return code, b"".join(chunks).decode("utf-8")
