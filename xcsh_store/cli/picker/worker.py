"""The picker's worker thread: it runs the index calls (searches, previews) so that typing and
moving never wait for them, and only the newest job of each kind counts.

A job waits for its delay (the pause in typing that ends a burst of keys) and is replaced by a
newer one of its kind while it waits; a newer job of the kind that runs interrupts it (SQLite
stops the statement at once; it clears the interrupt when the next statement starts with none
running, so only the job that runs is stopped); a job overtaken while it ran has its result
dropped. Kinds come in order: while a job of an earlier kind waits (a search), none of a later
kind (a preview of a row the search will replace) starts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class Job:
    """One call to make: ``run`` in the worker, after ``delay`` seconds without a newer job of
    its ``kind``, then ``done`` with its result or the exception it raised (in the worker's
    thread, and only while the job is the newest of its kind); ``interruptible``: a newer job
    of its kind stops it while it runs."""

    kind: str
    run: Callable[[], object]
    done: Callable[[object], None]
    delay: float = 0.0
    interruptible: bool = False
    submitted: float = field(default_factory=time.monotonic)


class Worker:
    """Runs jobs one at a time in a thread of its own, ``kinds`` in order of precedence;
    ``interrupt`` stops the running interruptible job from another thread."""

    def __init__(self, kinds: Sequence[str], interrupt: Callable[[], None]):
        self._kinds = tuple(kinds)
        self._interrupt = interrupt
        self._waiting: dict[str, Job] = {}
        self._newest: dict[str, Job] = {}
        self._running: Job | None = None
        self._closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._serve, name="xcsh-store-pick", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> None:
        """Run ``job`` after its delay, instead of any job of its kind that waits or runs."""
        with self._changed:
            if self._closed:
                return
            self._waiting[job.kind] = job
            self._newest[job.kind] = job
            running = self._running
            if running is not None and running.kind == job.kind and running.interruptible:
                self._interrupt()
            self._changed.notify()

    def close(self) -> None:
        """Drop what waits, stop what runs, and wait for the thread to end (the index it uses
        can be closed then); nothing is delivered after this returns."""
        with self._changed:
            self._closed = True
            self._waiting.clear()
            if self._running is not None and self._running.interruptible:
                self._interrupt()
            self._changed.notify()
        self._thread.join()

    def _next(self) -> Job | None:
        """The job to run next, once its delay has passed; None once closed."""
        with self._changed:
            while not self._closed:
                job = next((self._waiting[k] for k in self._kinds if k in self._waiting), None)
                if job is None:
                    self._changed.wait()
                    continue
                left = job.submitted + job.delay - time.monotonic()
                if left > 0:
                    self._changed.wait(left)  # a newer job may come meanwhile
                    continue
                del self._waiting[job.kind]
                self._running = job
                return job
            return None

    def _serve(self) -> None:
        while (job := self._next()) is not None:
            try:
                result = job.run()
            except Exception as error:  # the picker shows it; the worker goes on
                result = error
            with self._changed:
                self._running = None
                current = not self._closed and self._newest.get(job.kind) is job
                # Delivered while holding the lock, so that close() returning means no more.
                if current:
                    job.done(result)
