"""The benchmark harness measures time, isolated peak memory and bytes read, and prints tables."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.harness import (
    ChildError,
    Measurement,
    Row,
    compare,
    io_delta,
    measure_command,
    measure_in_child,
    percentile,
    print_table,
    summarize,
    time_call,
)

MB = 1_000_000


# Module-level so that spawned children can import them.
def allocate(size: int) -> int:
    block = bytearray(size)
    # Touch every page so it is resident, whatever the allocator does.
    block[::4096] = b"x" * len(block[::4096])
    return len(block)


def read_file(path: str) -> int:
    with open(path, "rb") as handle:
        return len(handle.read())


def fail(message: str) -> None:
    raise ValueError(message)


@pytest.fixture
def two_mb_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.bin"
    path.write_bytes(b"z" * (2 * MB))
    return path


# -- statistics ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("q", "expected"), [(0, 1.0), (50, 2.5), (95, 3.85), (100, 4.0)])
def test_percentile_interpolates_between_ranks(q: float, expected: float) -> None:
    assert percentile([4, 1, 3, 2], q) == pytest.approx(expected)


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_summarize_gives_the_usual_figures() -> None:
    assert summarize([1, 2, 3, 10]) == pytest.approx(
        {"min": 1, "p50": 2.5, "p95": 8.95, "max": 10, "mean": 4}
    )


def test_measurement_best_median_and_p95() -> None:
    m = Measurement("x", seconds=[3.0, 1.0, 2.0])
    assert (m.best, m.median, m.p95) == (1.0, 2.0, pytest.approx(2.9))


# -- in-process timing ---------------------------------------------------------------------------


def test_time_call_times_each_repetition_after_warmup() -> None:
    calls: list[int] = []
    m = time_call(calls.append, 1, repeat=3, warmup=2)
    assert (len(calls), len(m.seconds)) == (5, 3)


def test_time_call_runs_setup_before_every_run() -> None:
    events: list[str] = []
    time_call(events.append, "run", repeat=2, warmup=1, setup=lambda: events.append("setup"))
    assert events == ["setup", "run"] * 3


def test_io_delta_counts_bytes_read_here(two_mb_file: Path) -> None:
    with io_delta() as read:
        two_mb_file.read_bytes()
    assert read["rchar"] >= 2 * MB


# -- child processes -----------------------------------------------------------------------------


def test_child_peak_rss_includes_the_step_allocation() -> None:
    m = measure_in_child(allocate, 64 * MB)
    assert m.peak_rss is not None and m.base_rss is not None
    assert m.peak_rss - m.base_rss >= 60 * MB


def test_child_memory_does_not_include_the_parent_memory() -> None:
    ballast = allocate(200 * MB)
    m = measure_in_child(allocate, 1)
    assert ballast and m.peak_rss is not None and m.peak_rss < 150 * MB


def test_child_reports_bytes_read_and_the_result(two_mb_file: Path) -> None:
    m = measure_in_child(read_file, str(two_mb_file), repeat=2)
    assert (m.result, len(m.seconds)) == (2 * MB, 2)
    assert m.read_chars is not None and m.read_chars >= 2 * MB


def test_child_failure_raises_with_the_child_traceback() -> None:
    with pytest.raises(ChildError, match="ValueError: broken on purpose"):
        measure_in_child(fail, "broken on purpose")


# -- commands ------------------------------------------------------------------------------------


def test_command_peak_rss_and_output() -> None:
    code = f"b = bytearray({50 * MB}); b[::4096] = b'x' * len(b[::4096]); print(len(b))"
    m = measure_command([sys.executable, "-c", code])
    assert m.result == f"{50 * MB}\n".encode()
    assert m.peak_rss is not None and m.peak_rss >= 50 * MB


def test_command_bytes_read(two_mb_file: Path) -> None:
    m = measure_command(["cat", str(two_mb_file)], repeat=2)
    assert len(m.seconds) == 2
    assert m.read_chars is not None and m.read_chars >= 2 * MB


def test_failing_command_raises() -> None:
    with pytest.raises(subprocess.CalledProcessError):
        measure_command([sys.executable, "-c", "raise SystemExit(3)"])


# -- tables --------------------------------------------------------------------------------------


def test_ratio_of_times_is_baseline_over_measured() -> None:
    assert compare("sync", 0.5, 10.0).ratio == pytest.approx(20)


def test_ratio_of_throughputs_is_measured_over_baseline() -> None:
    assert compare("gen", 60e6, 20e6, unit="B/s", higher_is_better=True).ratio == pytest.approx(3)


@pytest.mark.parametrize(("measured", "met"), [(0.5, True), (2.0, False)])
def test_min_ratio_target(measured: float, met: bool) -> None:
    assert compare("sync", measured, 10.0, min_ratio=10).met is met


@pytest.mark.parametrize(("measured", "met"), [(40 * MB, True), (90 * MB, False)])
def test_limit_target(measured: float, met: bool) -> None:
    assert compare("peak RSS", measured, unit="B", limit=50 * MB).met is met


def test_compare_uses_the_median_of_a_measurement() -> None:
    assert compare("x", Measurement("x", seconds=[1.0, 9.0, 2.0])).measured == 2.0


def test_row_cells_show_values_ratio_and_target() -> None:
    row = compare("sync (no change)", 0.05, 1.2, min_ratio=10)
    assert row.cells() == ["sync (no change)", "50 ms", "1.20 s", "24×", "≥ 10× ✔"]


def test_missed_target_is_marked() -> None:
    assert compare("peak RSS", 90 * MB, unit="B", limit=50 * MB).cells()[-1] == "≤ 50 MB ✘"


def test_print_table_prints_aligned_text_then_markdown() -> None:
    out = io.StringIO()
    rows = [compare("sync", 0.05, 1.2, min_ratio=10), Row("search p95", 0.2, unit="s")]
    markdown = print_table(rows, file=out)
    text = out.getvalue()
    assert text.endswith(markdown + "\n")
    lines = text.splitlines()
    assert lines[0].split() == ["operation", "xcsh-store", "baseline", "ratio", "target"]
    assert len({line.index("ms") for line in lines[2:4]}) == 1, "right-aligned numbers"


def test_markdown_right_aligns_numeric_columns() -> None:
    markdown = print_table([["a", "1.5 s"], ["b|c", "20 ms"]], ["name", "time"], file=io.StringIO())
    assert markdown.splitlines() == [
        "| name | time |",
        "|---|---:|",
        "| a | 1.5 s |",
        "| b\\|c | 20 ms |",
    ]


def test_plain_rows_need_headers() -> None:
    with pytest.raises(ValueError, match="headers"):
        print_table([["a", 1]], file=io.StringIO())


def test_rows_must_match_the_headers() -> None:
    with pytest.raises(ValueError, match="cells"):
        print_table([["a", 1, 2]], ["name", "value"], file=io.StringIO())
