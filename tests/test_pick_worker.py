"""The picker's worker thread: only the newest job of a kind runs and is answered, a newer
search interrupts the one that runs, searches go before previews, and closing ends it. The
jobs are held on events, so what runs when is decided by the test, never by the clock."""

from __future__ import annotations

import threading
from collections.abc import Callable

from xcsh_store.cli.picker.worker import Job, Worker

WAIT = 60.0  # generous: only a failing test waits this long


class Recorder:
    """The jobs run and the results answered, in order; ``answered`` is set at each answer."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.answers: list[object] = []
        self.answered = threading.Event()

    def job(self, kind: str, name: str, run: Callable[[], object] | None = None, **options) -> Job:
        def work() -> object:
            self.ran.append(name)
            return run() if run is not None else name

        def done(result: object) -> None:
            self.answers.append(result)
            self.answered.set()

        return Job(kind, work, done, **options)


def _held(recorder: Recorder, kind: str = "search", interruptible: bool = False):
    """A job that runs until ``release`` is set, with ``started`` set once it runs."""
    started, release = threading.Event(), threading.Event()

    def run() -> str:
        started.set()
        assert release.wait(WAIT)
        return "held"

    return recorder.job(kind, "held", run, interruptible=interruptible), started, release


def test_only_the_newest_search_is_answered():
    recorder = Recorder()
    worker = Worker(("search", "preview"), interrupt=lambda: None)
    held, started, release = _held(recorder)
    worker.submit(held)
    assert started.wait(WAIT)
    worker.submit(recorder.job("search", "lo"))
    worker.submit(recorder.job("search", "log"))  # replaces "lo", which never runs
    release.set()
    assert recorder.answered.wait(WAIT)
    worker.close()
    assert recorder.ran == ["held", "log"]
    assert recorder.answers == ["log"]  # "held" was overtaken while it ran


def test_a_newer_search_interrupts_the_running_one():
    recorder = Recorder()
    interrupts: list[str] = []
    held, started, release = _held(recorder, interruptible=True)

    def interrupt() -> None:
        interrupts.append("interrupt")
        release.set()  # as SQLite's interrupt ends the running statement

    worker = Worker(("search", "preview"), interrupt=interrupt)
    worker.submit(held)
    assert started.wait(WAIT)
    worker.submit(recorder.job("search", "login"))
    assert recorder.answered.wait(WAIT)
    worker.close()
    assert interrupts == ["interrupt"]
    assert recorder.answers == ["login"]


def test_a_preview_does_not_interrupt_a_search():
    recorder = Recorder()
    interrupts: list[str] = []
    held, started, release = _held(recorder, interruptible=True)
    worker = Worker(("search", "preview"), interrupt=lambda: interrupts.append("interrupt"))
    worker.submit(held)
    assert started.wait(WAIT)
    worker.submit(recorder.job("preview", "row 1"))
    release.set()
    _wait_for_answers(recorder, 2)
    worker.close()
    assert interrupts == []
    assert recorder.answers == ["held", "row 1"]  # the search was the newest search


def _wait_for_answers(recorder: Recorder, count: int) -> None:
    while len(recorder.answers) < count:
        assert recorder.answered.wait(WAIT)
        recorder.answered.clear()


def test_a_waiting_search_goes_before_a_waiting_preview():
    recorder = Recorder()
    worker = Worker(("search", "preview"), interrupt=lambda: None)
    held, started, release = _held(recorder, kind="preview")
    worker.submit(held)
    assert started.wait(WAIT)
    worker.submit(recorder.job("preview", "row 2"))
    worker.submit(recorder.job("search", "login"))
    release.set()
    _wait_for_answers(recorder, 2)
    worker.close()
    assert recorder.ran == ["held", "login", "row 2"]


def test_a_job_waits_for_its_delay_and_a_newer_one_replaces_it():
    recorder = Recorder()
    worker = Worker(("search", "preview"), interrupt=lambda: None)
    worker.submit(recorder.job("search", "l", delay=3600.0))  # typing has not paused
    worker.submit(recorder.job("search", "lo"))
    assert recorder.answered.wait(WAIT)
    worker.close()
    assert recorder.ran == ["lo"]


def test_an_exception_is_the_answer_and_the_worker_goes_on():
    recorder = Recorder()
    worker = Worker(("search", "preview"), interrupt=lambda: None)

    def fail() -> object:
        raise ValueError("Nothing to search for")

    worker.submit(recorder.job("search", "-", fail))
    assert recorder.answered.wait(WAIT)
    recorder.answered.clear()
    worker.submit(recorder.job("search", "login"))
    assert recorder.answered.wait(WAIT)
    worker.close()
    assert isinstance(recorder.answers[0], ValueError)
    assert recorder.answers[1] == "login"


def test_close_drops_what_waits_and_stops_what_runs():
    recorder = Recorder()
    held, started, release = _held(recorder, interruptible=True)
    worker = Worker(("search", "preview"), interrupt=release.set)
    worker.submit(held)
    assert started.wait(WAIT)
    worker.submit(recorder.job("preview", "row 1", delay=3600.0))
    worker.close()  # returns: the search was interrupted, the preview never runs
    worker.submit(recorder.job("search", "after"))
    assert recorder.ran == ["held"]
    assert recorder.answers == []
