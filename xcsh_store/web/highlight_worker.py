"""The process that highlights code for the web app (highlight.py starts it and kills it when a
block runs over its time): it reads requests on stdin and writes Pygments' HTML on stdout, one
block at a time, until stdin closes.

It is run as a script (``python -P highlight_worker.py``), not as a module of the package: it
imports Pygments and the standard library only, so a fresh worker is ready in a tenth of a
second where importing the web app would take a second.

The protocol, every number big-endian:

* ready: the worker writes one byte, ``READY``, once Pygments is imported;
* request: ``>dHI`` (the seconds the block may take, the lexer's alias in bytes, the code in
  bytes), the alias (ASCII), the code (UTF-8; a lone surrogate passes as itself);
* answer: ``>BdI`` (``OK``, ``FAILED`` or ``RAN_OVER``, the CPU seconds the block took, the
  length), then the HTML (UTF-8), or the error's text when not OK.

A block that runs over its seconds is stopped by the worker itself (an alarm: Python's regular
expressions look for signals as they backtrack) and answered as failed, so that a worker whose
parent died without killing it does not spin on a hostile block for days (its time is wall
time: what a page waits for). The parent does not
rely on it: it kills a worker that has not answered in time (C code may not look for signals).
SIGINT is ignored: Ctrl-C stops the server, which then ends its workers.
"""

from __future__ import annotations

import signal
import struct
import sys
import time
from types import FrameType
from typing import BinaryIO

from pygments import highlight
from pygments.formatters.html import HtmlFormatter
from pygments.lexers import get_lexer_by_name

READY = b"\x01"
OK, FAILED, RAN_OVER = 0, 1, 2
REQUEST = struct.Struct(">dHI")
ANSWER = struct.Struct(">BdI")


def read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    """``size`` bytes of ``stream``; None at its end."""
    data = stream.read(size)
    return data if data is not None and len(data) == size else None


class RanOverError(Exception):
    """The block took longer than it was given."""


class Alarm:
    """SIGALRM as RanOverError, while armed (an alarm that fires as a block ends is ignored)."""

    def __init__(self) -> None:
        self.armed = False
        signal.signal(signal.SIGALRM, self._ring)

    def _ring(self, _signal: int, _frame: FrameType | None) -> None:
        if self.armed:
            raise RanOverError("the block ran over its time")

    def arm(self, seconds: float) -> None:
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def disarm(self) -> None:
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)


def serve_requests(requests: BinaryIO, answers: BinaryIO) -> None:
    """Answer each request of ``requests`` on ``answers`` until ``requests`` ends."""
    formatter = HtmlFormatter(nowrap=True, classprefix="")
    alarm = Alarm()
    answers.write(READY)
    answers.flush()
    while (head := read_exactly(requests, REQUEST.size)) is not None:
        seconds, alias_size, code_size = REQUEST.unpack(head)
        alias = read_exactly(requests, alias_size)
        code = read_exactly(requests, code_size)
        if alias is None or code is None:
            return
        started = time.process_time()
        try:
            alarm.arm(seconds)
            lexer = get_lexer_by_name(alias.decode("ascii"), stripnl=False)
            html = highlight(code.decode("utf-8", "surrogatepass"), lexer, formatter)
            alarm.disarm()
            status, body = OK, html.encode("utf-8", "surrogatepass")
        except Exception as error:  # a lexer's bug costs its block (shown plain), not the worker
            alarm.disarm()
            status = RAN_OVER if isinstance(error, RanOverError) else FAILED
            body = f"{type(error).__name__}: {error}".encode("utf-8", "replace")
        answers.write(ANSWER.pack(status, time.process_time() - started, len(body)) + body)
        answers.flush()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve_requests(sys.stdin.buffer, sys.stdout.buffer)
