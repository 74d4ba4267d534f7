"""xcsh-store: coding-agent session storage (xcsh/pi JSONL) with a SQLite index on top."""

from xcsh_store.history import HistoryEntry, HistoryStorage

__version__ = "0.1.0"

__all__ = ["HistoryEntry", "HistoryStorage"]
