"""Message builders and file readers shared by the session manager tests."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path
from typing import Any

import orjson

from xcsh_store.format.storage import FileSessionStorage


def user(text: str, timestamp: int = 1_767_323_046_000) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": timestamp}


def assistant(
    text: str = "ok",
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-5",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "messages",
        "provider": provider,
        "model": model,
        "usage": usage
        if usage is not None
        else {
            "input": 10,
            "output": 20,
            "cacheRead": 3,
            "cacheWrite": 4,
            "totalTokens": 37,
            "cost": {
                "input": 0.1,
                "output": 0.2,
                "cacheRead": 0.0,
                "cacheWrite": 0.0,
                "total": 0.3,
            },
        },
        "stopReason": "stop",
        "timestamp": 1_767_323_047_000,
    }


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every line of a file as JSON (strict: a malformed line fails the test)."""
    data = Path(path).read_bytes()
    assert data.endswith(b"\n"), "every line, including the last, ends with a newline"
    return [orjson.loads(line) for line in data.splitlines()]


def copy_fixture(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    shutil.copyfile(source, target)
    return target


class FlakyStorage(FileSessionStorage):
    """The real file system, except that writes fail (ENOSPC) while ``broken`` is set."""

    def __init__(self) -> None:
        self.broken = False

    def _check(self) -> None:
        if self.broken:
            raise OSError(errno.ENOSPC, "No space left on device")

    def open_writer(self, path: str, flags: str = "a"):  # type: ignore[no-untyped-def]
        self._check()
        writer = super().open_writer(path, flags)
        storage = self

        class Writer:
            def write_line(self, line: str | bytes) -> None:
                storage._check()
                writer.write_line(line)

            def flush(self) -> None:
                writer.flush()

            def fsync(self) -> None:
                storage._check()
                writer.fsync()

            def close(self) -> None:
                writer.close()

            def get_error(self) -> BaseException | None:
                return writer.get_error()

        return Writer()
