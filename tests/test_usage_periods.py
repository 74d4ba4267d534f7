"""Days, weeks and months of ``usage`` are grouped by SQLite (read/usage.py: a date modifier per
span of hours between two changes of the zone's offset), and put each request in the user's
period exactly as converting its timestamp in Python does: across daylight saving changes, in
zones of half and three-quarter hours, in the local zone ($TZ) and in UTC."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

import apsw
import pytest

from xcsh_store.index.read.usage import USAGE_GROUPS, zone_shift_sql

ZONES = [
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",  # daylight saving of half an hour
    "Asia/Kathmandu",  # +05:45
    "Pacific/Apia",  # skipped a whole day (2011-12-30)
    "UTC",
]


def python_period(timestamp: str, kind: str, zone: tzinfo | None) -> str:
    """The period of a UTC timestamp as Python's datetime puts it in ``zone`` (None: local)."""
    moment = datetime.fromisoformat(timestamp[:16] + "+00:00").astimezone(zone)
    day = moment.date()
    if kind == "week":
        return (day - timedelta(days=day.weekday())).isoformat()
    return day.isoformat()[:7] if kind == "month" else day.isoformat()


def timestamps() -> list[str]:
    """Every 37 minutes over two and a half years (each change of offset of each zone above
    falls between two of them somewhere), the ends of days, and a space for the T."""
    start = datetime(2011, 6, 1, tzinfo=UTC)
    found = [
        (start + timedelta(minutes=37 * step)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        for step in range(0, 2 * 365 * 24 * 60 // 37 + 9000)
    ]
    found += ["2012-03-25T00:59:59Z", "2012-03-25 01:00:00Z", "2011-12-31T23:59:00+00:00"]
    return found


@pytest.fixture(scope="module")
def connection(tmp_path_factory: pytest.TempPathFactory) -> Iterator[apsw.Connection]:
    path: Path = tmp_path_factory.mktemp("periods") / "periods.db"
    connection = apsw.Connection(str(path))
    connection.execute("CREATE TABLE entries (timestamp TEXT)")
    connection.execute("CREATE INDEX entries_timestamp ON entries (timestamp)")
    # zone_shift_sql reads the ends of usage_lines' timestamps too (migration 0018).
    connection.execute("CREATE TABLE usage_lines (timestamp TEXT)")
    connection.execute("CREATE VIEW usage_entries AS SELECT * FROM entries")
    with connection:
        connection.executemany("INSERT INTO entries VALUES (?)", [(ts,) for ts in timestamps()])
    yield connection
    connection.close()


def sql_periods(connection: apsw.Connection, zone: tzinfo | None) -> list[tuple[str, ...]]:
    shift = zone_shift_sql(connection, zone)
    kinds = ", ".join(USAGE_GROUPS[kind].format(shift=shift) for kind in ("day", "week", "month"))
    return list(connection.execute(f"SELECT timestamp, {kinds} FROM usage_entries ORDER BY 1"))


@pytest.mark.parametrize("name", ZONES)
def test_sql_periods_are_pythons(connection: apsw.Connection, name: str):
    zone = ZoneInfo(name)
    for timestamp, *periods in sql_periods(connection, zone):
        expected = [python_period(timestamp, kind, zone) for kind in ("day", "week", "month")]
        assert periods == expected, timestamp


def test_the_local_zone_is_tz(connection: apsw.Connection, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TZ", "Australia/Lord_Howe")
    time.tzset()
    try:
        rows = sql_periods(connection, None)
        for timestamp, *periods in rows:
            assert periods == [python_period(timestamp, k, None) for k in ("day", "week", "month")]
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_zone_of_one_offset_is_one_modifier_and_one_with_changes_a_case(
    connection: apsw.Connection,
):
    assert zone_shift_sql(connection, ZoneInfo("Asia/Kathmandu")) == "'+20700 seconds'"
    shift = zone_shift_sql(connection, ZoneInfo("Europe/Berlin"))
    # Two and a half years of Berlin: five changes, six spans.
    assert shift.count("WHEN") == 5 and "'+7200 seconds'" in shift


def test_an_index_without_timestamps_groups_by_today_s_offset(tmp_path: Path):
    connection = apsw.Connection(str(tmp_path / "empty.db"))
    connection.execute("CREATE TABLE entries (timestamp TEXT)")
    connection.execute("CREATE TABLE usage_lines (timestamp TEXT)")
    assert zone_shift_sql(connection, ZoneInfo("UTC")) == "'+0 seconds'"
    connection.close()
