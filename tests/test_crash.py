"""Crash safety with real processes: SIGKILL at random moments never loses flushed entries."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from crash_child import kill_and_check

RUNS = 30


def test_sigkill_never_loses_acknowledged_entries(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(
            pool.map(lambda seed: kill_and_check(tmp_path / f"run{seed}", seed), range(RUNS))
        )
    assert len(results) == RUNS
    # The kills must land while the child is busy, not only before its first batch.
    assert sum(result.flushed > 2 for result in results) >= RUNS // 2
