"""Worker processes of a sync: each reads its share of the files whole into chunks of rows,
and the one writer (the process that owns the connection) applies the chunks in file order.

The workers are fresh interpreters (``python -c``), not ``multiprocessing`` children. A fork
would be quickest on Linux, but the syncing process holds an apsw connection (and perhaps
threads, whose locks a fork copies mid-use): a child must never share that. ``spawn`` and
``forkserver`` start clean interpreters too, but they import the caller's ``__main__`` again
(re-running a script that has no ``if __name__ == "__main__"`` guard) and forkserver leaves a
server process behind for the rest of the caller's life. A plain subprocess inherits nothing
but its pipes, costs one interpreter start (a fraction of a second, paid only by syncs with
tens of MB to read), and is gone when the sync ends.

Each worker gets its list of files at once on stdin and writes length-prefixed marshalled
messages on stdout (marshal: the quickest to load of the formats that carry tuples, lists and
strings, and loading is the writer's, the busiest process of a sync): ``("opened", position,
stat)``, then ``("chunk", position, fields)`` up to the final chunk, or ``("failed", position,
(errno, strerror))`` when the file cannot be read; ``("crashed", None, traceback)`` when the
worker itself fails. A thread of the worker sends what its main thread built, at most
``OUTBOX_BYTES`` ahead of the writer: the pipe gives backpressure, so memory stays bounded
however big a file is. A killed writer closes the pipes: a worker's next write fails (EPIPE)
and it exits. A killed worker ends its pipe: the writer stops with :class:`SyncWorkerError`
and keeps what it applied (whole chunks, so whole lines).
"""

from __future__ import annotations

import collections
import contextlib
import gc
import marshal
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from xcsh_store.agents.prices.pricing import fixed_prices, price_table
from xcsh_store.errors import IndexDatabaseError
from xcsh_store.files import open_regular_file
from xcsh_store.index.archive.capture import KeptPieces
from xcsh_store.index.write.build import Chunk, FileStat, read_from_start

# Below this many bytes to read whole, a sync reads in its own process: starting interpreters
# would cost more than the second core saves.
PARALLEL_MIN_BYTES = 32 << 20
# Workers hand over smaller chunks than the writer's own reads: the writer starts on a big
# file sooner, and what waits in the pipes stays small.
WORKER_CHUNK_VALUES = 4_000
WORKER_CHUNK_BYTES = 2 << 20
# Marshalled chunks a worker may have built ahead of the writer.
OUTBOX_BYTES = 32 << 20
# Reading a file makes millions of small containers (parsed lines, rows) that live until their
# chunk is handed over: with the default thresholds (700, 10, 10) the cycle collector walked
# them again and again, finding nothing to free (parsed JSON holds no cycles), and took a fifth
# of a worker's time. Collections this much rarer cost nothing measurable.
FEW_COLLECTIONS = (50_000, 20, 100)
_HEADER_BYTES = 8


class SyncWorkerError(IndexDatabaseError):
    """A worker process of a sync died or failed; what the sync wrote before is kept."""


def default_workers() -> int:
    """The cores this process may run on."""
    counter = getattr(os, "process_cpu_count", None)  # Python 3.13
    if counter is not None:
        return max(1, counter() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def shares(sizes: list[tuple[int, int]], workers: int) -> list[list[int]]:
    """The positions of ``sizes`` ((position, bytes), in file order) each worker reads: each
    file goes to the worker with the fewest bytes so far, so that at every point of the file
    order the workers have about as much behind them."""
    assigned = [0] * workers
    result: list[list[int]] = [[] for _ in range(workers)]
    for position, size in sizes:
        worker = assigned.index(min(assigned))
        result[worker].append(position)
        assigned[worker] += size
    return result


# --------------------------------------------------------------------------------------------
# The writer's side


class Workers:
    """Worker processes reading files whole, each its own list in file order."""

    def __init__(
        self,
        tasks: list[list[tuple[int, str, KeptPieces | None]]],
        with_text: bool = True,
    ) -> None:
        # The folder that holds the package, importable however this process found it: as many
        # folders up from this file as its module name has dots (xcsh_store/index/write/...).
        package_parent = str(Path(__file__).resolve().parents[__name__.count(".")])
        path = os.environ.get("PYTHONPATH")
        environment = {
            **os.environ,
            "PYTHONPATH": package_parent + (os.pathsep + path if path else ""),
        }
        _keep_price_table()
        self.processes: list[subprocess.Popen[bytes]] = []
        try:
            for _ in tasks:
                self.processes.append(
                    subprocess.Popen(
                        # -P: no folder of the caller's (its working directory) on sys.path.
                        [sys.executable, "-P", "-c", _WORKER_CODE],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        env=environment,
                    )
                )
            # The sizes go with the tasks: they are this module's, as the writer sees it.
            settings = (WORKER_CHUNK_VALUES, WORKER_CHUNK_BYTES, OUTBOX_BYTES, with_text)
            for process, share in zip(self.processes, tasks, strict=True):
                assert process.stdin is not None
                process.stdin.write(marshal.dumps((settings, share)))
                process.stdin.close()
        except BaseException:
            self.close()
            raise

    def read(self, worker: int, position: int) -> tuple[FileStat, Iterator[Chunk]]:
        """The file at ``position`` as the worker read it: the stat it saw on opening it and
        its chunks (the last one final). OSError when it could not be read."""
        stat = self._receive(worker, position)
        return stat, self._chunks(worker, position)

    def _chunks(self, worker: int, position: int) -> Iterator[Chunk]:
        while True:
            chunk = Chunk._make(self._receive(worker, position))
            yield chunk
            if chunk.final:
                return

    def _receive(self, worker: int, position: int) -> Any:
        stream = self.processes[worker].stdout
        assert stream is not None
        header = stream.read(_HEADER_BYTES)
        size = int.from_bytes(header, "little") if len(header) == _HEADER_BYTES else -1
        data = stream.read(size) if size >= 0 else b""
        if size < 0 or len(data) < size:
            raise self._died(worker)
        kind, at, payload = marshal.loads(data)
        if kind == "crashed":
            raise SyncWorkerError(
                f"a sync worker failed: {payload.strip().splitlines()[-1]}; what was indexed"
                " is kept, sync again to carry on"
            )
        if at != position:
            raise SyncWorkerError(f"a sync worker sent file {at} where {position} was due")
        if kind == "failed":
            raise OSError(*payload)
        return payload

    def _died(self, worker: int) -> SyncWorkerError:
        process = self.processes[worker]
        code = process.wait()
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        return SyncWorkerError(
            f"a sync worker process ended unexpectedly ({how}); what was indexed is kept,"
            " sync again to carry on"
        )

    def close(self) -> None:
        """Stop every worker still running (after an error) and wait for them all."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for process in self.processes:
            process.wait()
            if process.stdout is not None:
                process.stdout.close()


def _keep_price_table() -> None:
    """The price table built here, once, and kept in the user's cache folder for the workers
    to load (a few milliseconds) before they start: else, on a first run, every worker built
    it itself (and wrote it)."""
    from xcsh_store.agents.prices.price_file import PriceFileError

    # (A bad prices file: each worker meets it where it prices a line, as before.)
    with fixed_prices(), contextlib.suppress(PriceFileError):
        price_table()


# --------------------------------------------------------------------------------------------
# The worker's side

_WORKER_CODE = "from xcsh_store.index.write.pipeline import worker_main; worker_main()"


class _Outbox:
    """Messages on their way to the writer, sent by a thread of their own so that building
    goes on while the writer is busy, and never more than ``limit`` bytes ahead of it."""

    def __init__(self, channel: IO[bytes], limit: int) -> None:
        self.channel = channel
        self.limit = limit
        self.pending: collections.deque[bytes] = collections.deque()
        self.size = 0
        self.closed = False
        self.condition = threading.Condition()
        self.thread = threading.Thread(target=self._send_all, daemon=True)
        self.thread.start()

    def put(self, message: tuple[str, int | None, Any]) -> None:
        data = marshal.dumps(message)
        with self.condition:
            while self.size and self.size + len(data) > self.limit:
                self.condition.wait()
            self.pending.append(data)
            self.size += len(data)
            self.condition.notify_all()

    def close(self) -> None:
        """Send what is pending, then stop."""
        with self.condition:
            self.closed = True
            self.condition.notify_all()
        self.thread.join()

    def _send_all(self) -> None:
        while True:
            with self.condition:
                while not self.pending and not self.closed:
                    self.condition.wait()
                if not self.pending:
                    return
                data = self.pending[0]
            try:
                self.channel.write(len(data).to_bytes(_HEADER_BYTES, "little"))
                self.channel.write(data)
                self.channel.flush()
            except OSError:
                # The writer is gone (killed, or stopped after an error): nothing more to do.
                os._exit(0)
            with self.condition:
                self.pending.popleft()
                self.size -= len(data)
                self.condition.notify_all()


def worker_main() -> None:
    """Read the files listed on stdin, sending what they hold to the writer on stdout."""
    # Ctrl-C reaches the whole process group: the writer stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.set_threshold(*FEW_COLLECTIONS)
    # The messages go on the original stdout; anything printed by accident goes to stderr.
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        settings, tasks = marshal.loads(sys.stdin.buffer.read())
    except (EOFError, ValueError):
        return  # the writer died before it handed out the files
    chunk_values, chunk_bytes, outbox_bytes, with_text = settings
    outbox = _Outbox(channel, outbox_bytes)
    try:
        with fixed_prices():  # every line priced with one table (see fixed_prices)
            for position, path, kept in tasks:
                _read(position, path, kept, outbox, chunk_values, chunk_bytes, with_text)
    except BaseException:
        outbox.put(("crashed", None, traceback.format_exc()))
    outbox.close()


def _read(
    position: int,
    path: str,
    kept: KeptPieces | None,
    outbox: _Outbox,
    chunk_values: int,
    chunk_bytes: int,
    with_text: bool,
) -> None:
    def emit(chunk: Chunk) -> bool:
        outbox.put(("chunk", position, tuple(chunk)))
        return False

    try:
        with open_regular_file(path) as stream:
            info = os.fstat(stream.fileno())
            stat = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)
            outbox.put(("opened", position, stat))
            read_from_start(
                stream, path, info.st_mtime_ns, emit, chunk_values, chunk_bytes,
                with_text=with_text, kept=kept,
            )  # fmt: skip
    except OSError as error:
        outbox.put(("failed", position, (error.errno, error.strerror or str(error))))
