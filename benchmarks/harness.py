"""Shared benchmark helpers: wall time, isolated peak memory and bytes read, result tables.

Three ways to measure a step:

* ``time_call(fn, ...)`` runs it in this process ``repeat`` times (best/median wall time, plus the
  bytes this process read during the runs, from ``/proc/self/io``);
* ``measure_in_child(fn, ...)`` runs each repetition in a fresh ``spawn``-ed interpreter, so the
  peak RSS (``VmHWM``, reset just before the step) and bytes read belong to that step alone;
  ``fn`` and its arguments must be picklable (module-level functions);
* ``measure_command(argv, ...)`` runs a command, taking its peak RSS from ``wait4`` and its bytes
  read from ``/proc/<pid>/io`` read while it is a zombie (exited but not yet reaped).

``compare(...)`` turns a measurement and its baseline into a ``Row`` (ratio, target met or not)
and ``print_table(rows)`` prints an aligned table followed by the same table in Markdown, for the
README.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO


@dataclass
class Measurement:
    """Wall times of the runs of one step and what the step used.

    ``peak_rss`` is the largest resident set of a measured run (bytes) and ``base_rss`` the
    resident set just before that run started, so ``peak_rss - base_rss`` is the step's own
    growth. ``read_chars`` is ``rchar`` (bytes returned by read-like system calls, cached or
    not) and ``read_bytes`` the bytes fetched from storage (page-cache misses), both for the
    run with the largest ``rchar``. Fields stay None when the platform cannot tell.
    """

    label: str
    seconds: list[float] = field(default_factory=list)
    peak_rss: int | None = None
    base_rss: int | None = None
    read_chars: int | None = None
    read_bytes: int | None = None
    result: Any = None

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def p95(self) -> float:
        return percentile(self.seconds, 95)


class ChildError(RuntimeError):
    """The measured step failed in its child process; the message holds the child's traceback."""


# ------------------------------------------------------------------------------------------------
# Statistics


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, not {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(values: Sequence[float]) -> dict[str, float]:
    """min, p50, p95, max and mean of a list of timings (or any numbers)."""
    return {
        "min": min(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "max": max(values),
        "mean": statistics.fmean(values),
    }


# ------------------------------------------------------------------------------------------------
# /proc readers


def io_counters(pid: int | str = "self") -> dict[str, int] | None:
    """``/proc/<pid>/io`` as a dict (``rchar``, ``read_bytes``, ...), or None where unavailable."""
    try:
        with open(f"/proc/{pid}/io", encoding="ascii") as handle:
            return {key: int(value) for key, value in (line.split(":") for line in handle)}
    except OSError:
        return None


def _status_bytes(key: str) -> int | None:
    """A ``kB`` line of ``/proc/self/status`` (``VmRSS``, ``VmHWM``) in bytes."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    """Make ``VmHWM`` start again from the current RSS (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        return False
    return True


@contextmanager
def io_delta() -> Iterator[dict[str, int]]:
    """Bytes this process read inside the ``with`` block: ``rchar`` and ``read_bytes`` deltas.

    The yielded dict is filled when the block ends (it stays empty where /proc is missing).
    """
    delta: dict[str, int] = {}
    before = io_counters()
    try:
        yield delta
    finally:
        after = io_counters()
        if before is not None and after is not None:
            delta["rchar"] = after["rchar"] - before["rchar"]
            delta["read_bytes"] = after["read_bytes"] - before["read_bytes"]


# ------------------------------------------------------------------------------------------------
# Measuring


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", repr(fn))


def time_call(
    fn: Callable[..., Any],
    *args: Any,
    repeat: int = 5,
    warmup: int = 1,
    setup: Callable[[], Any] | None = None,
    label: str | None = None,
    **kwargs: Any,
) -> Measurement:
    """Run ``fn(*args, **kwargs)`` ``warmup + repeat`` times here and time the last ``repeat``.

    ``setup`` (untimed) runs before every run, e.g. to copy a fresh corpus. Bytes read are the
    largest of the timed runs; peak memory is not measured in-process (use
    ``measure_in_child``).
    """
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    measurement = Measurement(label or _name(fn))
    for run in range(warmup + repeat):
        if setup is not None:
            setup()
        with io_delta() as read:
            started = time.perf_counter()
            result = fn(*args, **kwargs)
            elapsed = time.perf_counter() - started
        if run < warmup:
            continue
        measurement.seconds.append(elapsed)
        measurement.result = result
        if read and (measurement.read_chars is None or read["rchar"] > measurement.read_chars):
            measurement.read_chars = read["rchar"]
            measurement.read_bytes = read["read_bytes"]
    return measurement


def time_interleaved(*calls: Callable[[], Any], repeat: int = 7) -> list[Measurement]:
    """Time calls in alternation (after one warm-up round), so that a machine that slows
    down for a while slows every side alike and their ratios stay fair."""
    runs = [Measurement(_name(call)) for call in calls]
    for run in range(1 + repeat):
        for measurement, call in zip(runs, calls, strict=True):
            started = time.perf_counter()
            result = call()
            if run:
                measurement.seconds.append(time.perf_counter() - started)
                measurement.result = result
    return runs


def _child_main(conn: Any, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    # Resetting the high-water mark after start-up and imports leaves only the step's own peak
    # (plus what was already resident, reported as base_rss).
    _reset_peak_rss()
    base_rss = _status_bytes("VmRSS")
    before = io_counters()
    started = time.perf_counter()
    try:
        result, error = fn(*args, **kwargs), None
    except BaseException:
        result, error = None, traceback.format_exc()
    elapsed = time.perf_counter() - started
    after = io_counters()
    peak_rss = _status_bytes("VmHWM")
    read = None
    if before is not None and after is not None:
        read = (after["rchar"] - before["rchar"], after["read_bytes"] - before["read_bytes"])
    conn.send((elapsed, base_rss, peak_rss, read, result, error))
    conn.close()


def measure_in_child(
    fn: Callable[..., Any],
    *args: Any,
    repeat: int = 1,
    label: str | None = None,
    **kwargs: Any,
) -> Measurement:
    """Run ``fn(*args, **kwargs)`` in a fresh interpreter per repetition and measure it there.

    A forked child would share (and count) the parent's resident pages, so children are
    spawned. Their start-up is not timed: the clock and the memory high-water mark both start
    just before ``fn`` is called. The result of the last run is returned in ``result``; an
    exception in the child is raised here as ``ChildError`` with the child's traceback.
    """
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    context = multiprocessing.get_context("spawn")
    measurement = Measurement(label or _name(fn))
    for _ in range(repeat):
        receiver, sender = context.Pipe(duplex=False)
        child = context.Process(target=_child_main, args=(sender, fn, args, kwargs))
        child.start()
        sender.close()
        try:
            elapsed, base_rss, peak_rss, read, result, error = receiver.recv()
        except EOFError:
            child.join()
            raise ChildError(f"{measurement.label}: child exited with {child.exitcode}") from None
        finally:
            receiver.close()
        child.join()
        if error is not None:
            raise ChildError(f"{measurement.label} failed in its child process:\n{error}")
        measurement.seconds.append(elapsed)
        measurement.result = result
        if peak_rss is not None and (
            measurement.peak_rss is None or peak_rss > measurement.peak_rss
        ):
            measurement.peak_rss, measurement.base_rss = peak_rss, base_rss
        if read is not None and (
            measurement.read_chars is None or read[0] > measurement.read_chars
        ):
            measurement.read_chars, measurement.read_bytes = read
    return measurement


def measure_command(
    argv: Sequence[str],
    *,
    repeat: int = 1,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    label: str | None = None,
    check: bool = True,
) -> Measurement:
    """Run a command ``repeat`` times: wall time, peak RSS and bytes read of each run.

    Peak RSS is the ``ru_maxrss`` that ``wait4`` reports for the command (including descendants
    it waited for); bytes read are the command process's own ``/proc/<pid>/io``, read after it
    exited and before it is reaped. ``result`` holds the last run's stdout (bytes). With
    ``check`` a non-zero exit raises ``subprocess.CalledProcessError``.
    """
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    measurement = Measurement(label or " ".join(argv))
    for _ in range(repeat):
        # stdout goes to a file, not a pipe: draining a pipe would need a thread, and reaping
        # through Popen.communicate would lose the zombie's /proc/<pid>/io.
        with tempfile.TemporaryFile() as output:
            started = time.perf_counter()
            process = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=output)
            os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
            elapsed = time.perf_counter() - started
            read = io_counters(process.pid)
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            output.seek(0)
            stdout = output.read()
        if check and process.returncode != 0:
            raise subprocess.CalledProcessError(process.returncode, list(argv), stdout)
        measurement.seconds.append(elapsed)
        measurement.result = stdout
        # ru_maxrss is in KiB on Linux.
        peak_rss = usage.ru_maxrss * 1024
        if measurement.peak_rss is None or peak_rss > measurement.peak_rss:
            measurement.peak_rss = peak_rss
        if read is not None and (
            measurement.read_chars is None or read["rchar"] > measurement.read_chars
        ):
            measurement.read_chars, measurement.read_bytes = read["rchar"], read["read_bytes"]
    return measurement


# ------------------------------------------------------------------------------------------------
# Results


def format_seconds(seconds: float) -> str:
    if seconds >= 100:
        return f"{seconds:,.0f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def format_bytes(count: float) -> str:
    """Decimal units, as disk sizes are usually quoted: ``1.23 GB``, ``340 MB``, ``512 B``."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(count) >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count:.0f} B"


def format_value(value: float, unit: str) -> str:
    """``unit`` is ``"s"`` (seconds), ``"B"`` (bytes), ``"B/s"``, or any label printed as is."""
    if unit == "s":
        return format_seconds(value)
    if unit == "B":
        return format_bytes(value)
    if unit == "B/s":
        return format_bytes(value) + "/s"
    return f"{value:,.4g}{' ' + unit if unit else ''}"


@dataclass
class Row:
    """One line of a results table: an operation, its baseline, the ratio and the target."""

    operation: str
    measured: float
    baseline: float | None = None
    unit: str = "s"
    higher_is_better: bool = False
    target: str = ""
    met: bool | None = None

    @property
    def ratio(self) -> float | None:
        """How many times better than the baseline (> 1 is better, whatever the direction)."""
        if self.baseline is None:
            return None
        better, worse = (
            (self.measured, self.baseline)
            if self.higher_is_better
            else (self.baseline, self.measured)
        )
        if worse == 0:
            return math.inf if better else None
        return better / worse

    def cells(self) -> list[str]:
        ratio = self.ratio
        if self.met is None:
            target = self.target or "–"
        else:
            target = f"{self.target} {'✔' if self.met else '✘'}".strip()
        return [
            self.operation,
            format_value(self.measured, self.unit),
            "–" if self.baseline is None else format_value(self.baseline, self.unit),
            "–" if ratio is None else f"{ratio:.3g}×",
            target,
        ]


ROW_HEADERS = ("operation", "xcsh-store", "baseline", "ratio", "target")


def compare(
    operation: str,
    measured: float | Measurement,
    baseline: float | Measurement | None = None,
    *,
    unit: str = "s",
    higher_is_better: bool = False,
    min_ratio: float | None = None,
    limit: float | None = None,
) -> Row:
    """A table row for ``measured`` against ``baseline``, checking at most one target.

    A ``Measurement`` counts with its median time. ``min_ratio``: the ratio to the baseline
    must be at least that (e.g. ``10`` for "10× faster"). ``limit``: the measured value must be
    at most (or, with ``higher_is_better``, at least) that, in ``unit``.
    """
    if min_ratio is not None and limit is not None:
        raise ValueError("give min_ratio or limit, not both")
    value = measured.median if isinstance(measured, Measurement) else measured
    base = baseline.median if isinstance(baseline, Measurement) else baseline
    row = Row(operation, value, base, unit, higher_is_better)
    if min_ratio is not None:
        if base is None:
            raise ValueError("min_ratio needs a baseline")
        row.target = f"≥ {min_ratio:g}×"
        row.met = (row.ratio or 0) >= min_ratio
    elif limit is not None:
        row.target = f"{'≥' if higher_is_better else '≤'} {format_value(limit, unit)}"
        row.met = value >= limit if higher_is_better else value <= limit
    return row


def _aligned(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    numeric = [
        all(_looks_numeric(row[i]) for row in rows) and bool(rows) for i in range(len(headers))
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if right else cell.ljust(width)
            for cell, width, right in zip(cells, widths, numeric, strict=True)
        ).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def _markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def escape(cell: str) -> str:
        return cell.replace("|", "\\|")

    numeric = [
        all(_looks_numeric(row[i]) for row in rows) and bool(rows) for i in range(len(headers))
    ]
    lines = ["| " + " | ".join(escape(h) for h in headers) + " |"]
    lines.append("|" + "|".join("---:" if right else "---" for right in numeric) + "|")
    lines += ["| " + " | ".join(escape(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _looks_numeric(cell: str) -> bool:
    return cell == "–" or (bool(cell) and (cell[0].isdigit() or cell[0] in "-+.∞"))


def print_table(
    rows: Sequence[Row | Sequence[Any]],
    headers: Sequence[str] | None = None,
    *,
    title: str | None = None,
    file: TextIO | None = None,
) -> str:
    """Print ``rows`` as an aligned table, then as Markdown; return the Markdown.

    Rows are ``Row`` objects (headers default to operation / xcsh-store / baseline / ratio /
    target) or plain sequences of cells (then ``headers`` is required). Numeric columns are
    right-aligned.
    """
    if headers is None:
        if not all(isinstance(row, Row) for row in rows):
            raise ValueError("headers are required for rows that are not Row objects")
        headers = ROW_HEADERS
    cells = [row.cells() if isinstance(row, Row) else [str(cell) for cell in row] for row in rows]
    for row in cells:
        if len(row) != len(headers):
            raise ValueError(f"row {row} has {len(row)} cells for {len(headers)} headers")
    out = file or sys.stdout
    markdown = _markdown(headers, cells)
    if title:
        print(title, file=out)
    print(_aligned(headers, cells), file=out)
    print(file=out)
    if title:
        print(f"**{title}**", file=out)
        print(file=out)
    print(markdown, file=out)
    return markdown
