"""Time formats: toISOString-style UTC milliseconds, and reading timestamps back."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from xcsh_store import times


def test_iso_millis_has_three_fraction_digits():
    moment = datetime(2026, 2, 16, 10, 20, 30, 7000, tzinfo=UTC)
    assert times.iso_millis(moment) == "2026-02-16T10:20:30.007Z"


def test_iso_now_is_utc_with_milliseconds():
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", times.iso_now())


def test_iso_millis_converts_to_utc_and_reads_naive_as_utc():
    east = datetime(2026, 2, 16, 12, 20, 30, 7999, tzinfo=timezone(timedelta(hours=2)))
    assert times.iso_millis(east) == "2026-02-16T10:20:30.007Z"
    assert times.iso_millis(datetime(2026, 2, 16, 10, 20, 30)) == "2026-02-16T10:20:30.000Z"


def test_iso_millis_from_epoch_seconds():
    assert times.iso_millis(1_771_237_230.0071) == "2026-02-16T10:20:30.007Z"


def test_timestamp_to_millis_reads_iso_and_passes_numbers():
    assert times.timestamp_to_millis("2026-02-16T10:20:30.007Z") == 1_771_237_230_007
    assert times.timestamp_to_millis(" 2026-02-16T10:20:30.007 ") == 1_771_237_230_007
    assert times.timestamp_to_millis(12.5) == 12.5
    assert times.timestamp_to_millis(True) is None
    assert times.timestamp_to_millis("yesterday") is None
