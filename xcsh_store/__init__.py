"""xcsh-store: coding-agent session storage (xcsh/pi JSONL) with a SQLite index on top."""

__version__ = "0.1.0"
