"""Code highlighted under a budget, so that no session can hang a page: only with the Pygments
lexers of ``lexers.txt`` and only blocks within each one's cap there (benchmarks/lexer_check.py
gives each lexer the largest size at which it stays cheap and at most quadratic on hostile
input; dozens of the others backtrack for minutes or days on a few kilobytes), never more than
BLOCK_CHARACTERS, each in a worker process given BLOCK_SECONDS and killed when it runs over (a
regular expression in a thread cannot be interrupted), at most PAGE_SECONDS of it for a page and
none while other pages wait for their turn. Whatever is not highlighted is shown plain.

A ``Highlighter`` owns its workers (highlight_worker.py, one per page made at once, started
when first needed); ``close`` kills them, and a page still waiting for one gets plain text."""

from __future__ import annotations

import hashlib
import logging
import os
import select
import subprocess
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources

import pygments

from xcsh_store.errors import XcshStoreError
from xcsh_store.web import highlight_worker
from xcsh_store.web.highlight_worker import ANSWER, OK, RAN_OVER, READY, REQUEST

log = logging.getLogger("xcsh_store")

# Characters of one block highlighted, at most, whatever the lexer (a longer one is shown
# plain): a page shows at most 20,000 characters of an entry. Each lexer's own cap
# (lexers.txt) is at most this.
BLOCK_CHARACTERS = 20_000
# Seconds one block may take in its worker before the worker is killed.
BLOCK_SECONDS = 1.0
# Seconds of highlighting one page may spend in all; its other blocks are shown plain.
PAGE_SECONDS = 2.0
# Seconds a fresh worker may take to import Pygments before it is given up.
START_SECONDS = 10.0
# Blocks remembered as having run over (each as a digest): a page asked again shows them plain
# at once instead of killing a worker on them again.
RAN_OVER_REMEMBERED = 1024
# The list of checked lexers beside this module, written by benchmarks/lexer_check.py.
LEXERS_FILE = "lexers.txt"


class LexerListError(XcshStoreError):
    """lexers.txt is missing, malformed, or was checked with another version of Pygments."""


@dataclass(frozen=True)
class CheckedLexer:
    """A lexer highlighting may use: its class's name and the most characters of a block it
    is given (a longer block is shown plain)."""

    class_name: str
    max_chars: int


def lexer_list_line(class_name: str, max_chars: int, aliases: list[str]) -> str:
    """One lexer's line of lexers.txt: class name, cap and aliases, tab-separated."""
    return f"{class_name}\t{max_chars}\t{' '.join(aliases)}"


def checked_lexers(text: str | None = None) -> dict[str, CheckedLexer]:
    """The lexers highlighting may use: each alias a fence may name -> its lexer, read from
    ``text`` (default: lexers.txt; see lexer_list_line). Refused when a line is not a lexer
    with a cap of 1 to BLOCK_CHARACTERS, or the list was checked with another version of
    Pygments than the one installed: a lexer's expressions change between versions."""
    if text is None:
        text = resources.files("xcsh_store.web").joinpath(LEXERS_FILE).read_text("utf-8")
    version, lexers = None, {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("# pygments "):
            version = line.removeprefix("# pygments ").strip()
        elif line.strip() and not line.startswith("#"):
            lexer, aliases = _lexer_line(line, number)
            lexers.update(dict.fromkeys(aliases, lexer))
    if version != pygments.__version__:
        raise LexerListError(
            f"{LEXERS_FILE} was checked with Pygments {version}, not the installed"
            f" {pygments.__version__}: run python -m benchmarks.lexer_check --write"
        )
    return lexers


def _lexer_line(line: str, number: int) -> tuple[CheckedLexer, list[str]]:
    fields = line.split("\t")
    if len(fields) == 3 and fields[1].isdigit() and fields[2].split():
        class_name, max_chars, aliases = fields[0], int(fields[1]), fields[2].split()
        if class_name.isidentifier() and 0 < max_chars <= BLOCK_CHARACTERS:
            return CheckedLexer(class_name, max_chars), aliases
    raise LexerListError(
        f"{LEXERS_FILE} line {number} is not a lexer's class name, its cap (1 to"
        f" {BLOCK_CHARACTERS:,} characters) and its aliases, tab-separated: {line[:80]!r}"
    )


@dataclass(frozen=True)
class Answer:
    """What a worker made of a block: its HTML (None when the lexer failed on it or it ran
    over its seconds, stopped by the worker) and the CPU seconds it took (until stopped)."""

    html: str | None
    cpu_seconds: float
    ran_over: bool = False


class WorkerGoneError(Exception):
    """The worker ended (killed, or it crashed) before it answered."""


class Worker:
    """One highlight_worker.py process and its pipes."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            # -P: the script's folder (this package's) is not put on sys.path.
            [sys.executable, "-P", highlight_worker.__file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._requests = self.process.stdin.fileno()
        self._answers = self.process.stdout.fileno()
        self.ready = False

    def wait_ready(self, seconds: float) -> bool:
        """Whether the worker has imported Pygments, waiting at most ``seconds`` for it."""
        if not self.ready:
            self.ready = self._read(len(READY), time.monotonic() + seconds) == READY
        return self.ready

    def ask(self, alias: str, code: str, seconds: float) -> Answer | None:
        """``code`` highlighted with the lexer ``alias``; None when it took longer than
        ``seconds`` (the worker stops it, or is killed when it does not answer in time).
        WorkerGoneError when the worker ended."""
        answer = self.answer(alias, code, seconds)
        return None if answer is None or answer.ran_over else answer

    def answer(self, alias: str, code: str, seconds: float) -> Answer | None:
        """As ``ask``, but a block the worker stopped at ``seconds`` is an Answer that ran
        over, with the CPU seconds it had taken; None only when the worker was killed."""
        deadline = time.monotonic() + seconds
        name, data = alias.encode("ascii"), code.encode("utf-8", "surrogatepass")
        try:
            self._write(REQUEST.pack(seconds, len(name), len(data)) + name + data)
        except OSError as error:
            raise WorkerGoneError(str(error)) from error
        # The worker stops a block itself at ``seconds``; a moment more for its answer to come.
        head = self._read(ANSWER.size, deadline + 0.25)
        if head is None:
            self.kill()
            return None
        status, cpu_seconds, size = ANSWER.unpack(head)
        body = self._read(size, deadline + 0.25)
        if body is None:
            self.kill()
            return None
        html = body.decode("utf-8", "surrogatepass") if status == OK else None
        return Answer(html, cpu_seconds, ran_over=status == RAN_OVER)

    def kill(self) -> None:
        """End the worker now, whatever it is doing (a thread waiting for its answer gets
        WorkerGoneError)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def close(self) -> None:
        """Kill it and close its pipes: by the thread that uses it, or of an idle worker (a
        pipe closed under another thread's read could be a new file by the time it reads)."""
        self.kill()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._requests, view) :]

    def _read(self, size: int, deadline: float) -> bytes | None:
        """``size`` bytes of the worker's answers, or None when they have not all come by
        ``deadline``; WorkerGoneError when the worker ended first."""
        parts: list[bytes] = []
        missing = size
        while missing:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._answers], [], [], left)[0]:
                return None
            try:
                part = os.read(self._answers, missing)
            except (OSError, ValueError) as error:  # ValueError: its pipe was closed
                raise WorkerGoneError(str(error)) from error
            if not part:
                raise WorkerGoneError("the worker ended")
            parts.append(part)
            missing -= len(part)
        return b"".join(parts)


class Budget:
    """The highlighting one page may still do: PAGE_SECONDS of it in all, and none while
    ``crowded()`` says other pages wait for their turn (they would wait for it)."""

    def __init__(
        self, seconds: float = PAGE_SECONDS, crowded: Callable[[], bool] = lambda: False
    ) -> None:
        self.left = seconds
        self.crowded = crowded
        # A block was shown plain for want of budget, not for what it is: the page it is on is
        # no answer to keep.
        self.short = False

    def allows(self) -> bool:
        if self.left > 0 and not self.crowded():
            return True
        self.short = True
        return False

    def spend(self, seconds: float) -> None:
        self.left -= seconds


def _close_all(workers: set[Worker]) -> None:
    for worker in list(workers):
        worker.close()


class Highlighter:
    """Pygments in worker processes, ``workers`` at most (one per page made at once), with
    only the ``lexers`` checked (default: lexers.txt), each on blocks within its cap and
    ``block_characters`` only."""

    def __init__(
        self,
        lexers: Mapping[str, CheckedLexer] | None = None,
        workers: int = 2,
        block_seconds: float = BLOCK_SECONDS,
        block_characters: int = BLOCK_CHARACTERS,
    ) -> None:
        self.lexers = dict(checked_lexers() if lexers is None else lexers)
        self.most_workers = workers
        self.block_seconds = block_seconds
        self.block_characters = block_characters
        self._lock = threading.Lock()
        self._idle: list[Worker] = []
        self._all: set[Worker] = set()
        self._ran_over: OrderedDict[bytes, None] = OrderedDict()
        self._closed = False
        # An app that is never shut down (a test's) still ends its workers once it is gone.
        weakref.finalize(self, _close_all, self._all)

    def alias_of(self, language: str) -> str | None:
        """The checked lexer a fence's info string names (its first word), or None."""
        words = language.split()
        alias = words[0].lower() if words else ""
        return alias if alias in self.lexers else None

    def highlight(self, code: str, language: str, budget: Budget) -> str | None:
        """``code`` as Pygments' HTML for the lexer ``language`` names; None when it is to be
        shown plain: no checked lexer, longer than its lexer's cap, over the budget, no worker
        free, or it ran over its time (now or before)."""
        alias = self.alias_of(language)
        if alias is None or len(code) > min(self.lexers[alias].max_chars, self.block_characters):
            return None
        digest = hashlib.blake2b(f"{alias}\0{code}".encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            if digest in self._ran_over:
                return None
        if not budget.allows():
            return None
        worker = self._take()
        if worker is None:
            budget.short = True
            return None
        started = time.monotonic()
        try:
            # The whole BLOCK_SECONDS, whatever the page has left: a block is remembered as
            # running over for what it is, never for where it is (a page overruns by a block).
            answer = worker.ask(alias, code, self.block_seconds)
            if answer is None:
                self._remember_ran_over(digest, alias, len(code))
        except WorkerGoneError:  # closed, or the worker crashed: this block only is plain
            answer = None
            worker.kill()
        budget.spend(time.monotonic() - started)
        self._give_back(worker)
        return None if answer is None else answer.html

    def close(self) -> None:
        """Kill every worker (a page waiting for one gets plain text at once); from now on
        every block is shown plain."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            busy = self._all - set(idle)
            self._all.difference_update(idle)
        for worker in idle:
            worker.close()
        for worker in busy:
            worker.kill()  # the thread using it closes it

    def _take(self) -> Worker | None:
        """An idle worker, or a new one when fewer than ``most_workers`` run; None when all are
        busy (the block is shown plain rather than waiting) or the highlighter is closed."""
        with self._lock:
            if self._closed:
                return None
            if self._idle:
                return self._idle.pop()
            if len(self._all) >= self.most_workers:
                return None
            worker = Worker()
            self._all.add(worker)
        try:
            if worker.wait_ready(START_SECONDS):
                return worker
            log.warning("serve: a highlighting worker did not start in %s s", START_SECONDS)
        except WorkerGoneError:  # closed while it started, or it could not start
            pass
        worker.kill()
        self._give_back(worker)
        return None

    def _give_back(self, worker: Worker) -> None:
        """An idle worker again; closed when it ended (or the highlighter did)."""
        with self._lock:
            if worker.process.returncode is None and not self._closed:
                self._idle.append(worker)
                return
            self._all.discard(worker)
        worker.close()

    def _remember_ran_over(self, digest: bytes, alias: str, size: int) -> None:
        log.warning(
            "serve: a %s block of %s characters ran over its time: shown plain", alias, size
        )
        with self._lock:
            self._ran_over[digest] = None
            while len(self._ran_over) > RAN_OVER_REMEMBERED:
                self._ran_over.popitem(last=False)
