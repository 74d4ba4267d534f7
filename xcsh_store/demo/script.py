"""A session of the demo written through the library: :class:`SessionScript` plays an agent's
turns into a :class:`~xcsh_store.session.manager.SessionManager` on a virtual clock, with
token counts and costs drawn from a seed, then gives the file the story's times and ids.

The same seed writes the same bytes: every draw from the generators happens in the order the
story asks for it.
"""

from __future__ import annotations

import base64
import os
import random
import struct
import zlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from xcsh_store.format.blobs import BlobStore, parse_blob_ref
from xcsh_store.format.jsonl import dumps_line, read_jsonl_file
from xcsh_store.format.storage import FileSessionStorage, write_atomically
from xcsh_store.paths import (
    _SNOWFLAKE_EPOCH_MS,
    artifacts_dir_for,
    get_blobs_dir,
    session_file_name,
)
from xcsh_store.session.manager import SessionManager
from xcsh_store.times import iso_millis

# Dollars per million tokens: input, output, cache read, cache write.
PRICES = {
    "anthropic/claude-sonnet-4-5": (3.0, 15.0, 0.30, 3.75),
    "openai/gpt-5": (1.25, 10.0, 0.125, 0.0),
    "google/gemini-2.5-pro": (1.25, 10.0, 0.31, 0.0),
}
APIS = {"anthropic": "anthropic-messages", "openai": "openai-responses", "google": "google"}


def png_bytes(width: int, height: int, rng: random.Random) -> bytes:
    """A small noisy gradient PNG: big enough (noise does not compress) to be stored as a blob."""
    rows = []
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            row += bytes(
                (
                    (40 + x * 6 + rng.randrange(24)) % 256,
                    (60 + y * 5 + rng.randrange(24)) % 256,
                    (120 + rng.randrange(48)) % 256,
                )
            )
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


def millis(moment: datetime) -> int:
    """``moment`` in milliseconds since the Unix epoch, as message timestamps are written."""
    return int(moment.timestamp() * 1000)


class SessionScript:
    """Writes one session through SessionManager on a virtual clock.

    The manager takes the session id, the entry ids and the timestamps from the real clock and
    a random generator, as it does for an agent; ``finish`` gives the written file the story's
    times and ids drawn from ``ids`` (the same on every run) and moves it to the file name
    those make.
    """

    def __init__(
        self,
        agent_dir: str,
        cwd: str,
        start: datetime,
        model: str,
        rng: random.Random,
        ids: random.Random,
    ) -> None:
        self.agent_dir = agent_dir
        self.manager = SessionManager.create(cwd, agent_dir=agent_dir)
        self.start = self.clock = start
        self.model = model
        self.rng = rng
        self.ids = ids
        self.times: dict[str, datetime] = {}
        self.calls = 0
        self.context_tokens = rng.randrange(6000, 9000)
        self.stamp(self.manager.append_model_change(model))

    def stamp(self, entry_id: str) -> str:
        self.times[entry_id] = self.clock
        return entry_id

    def wait(self, low: float, high: float) -> None:
        self.clock += timedelta(seconds=self.rng.uniform(low, high))

    def thinking_level(self, level: str) -> str:
        return self.stamp(self.manager.append_thinking_level_change(level))

    def user(self, text: str, image: bytes | None = None) -> str:
        self.wait(25, 110)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if image is not None:
            content.append(_image_block(image))
        message = {"role": "user", "content": content, "timestamp": millis(self.clock)}
        return self.stamp(self.manager.append_message(message))

    def assistant(
        self,
        text: str | None = None,
        thinking: str | None = None,
        calls: tuple[tuple[str, dict[str, Any]], ...] = (),
    ) -> tuple[str, list[str]]:
        self.wait(5, 45)
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking})
        if text:
            content.append({"type": "text", "text": text})
        call_ids = []
        for name, arguments in calls:
            self.calls += 1
            call_ids.append(f"call_{self.calls:03d}")
            content.append(
                {"type": "toolCall", "id": call_ids[-1], "name": name, "arguments": arguments}
            )
        provider, model = self.model.split("/")
        message = {
            "role": "assistant",
            "content": content,
            "api": APIS[provider],
            "provider": provider,
            "model": model,
            "usage": self._usage(len(text or "") + len(thinking or "")),
            "stopReason": "toolUse" if calls else "stop",
            "timestamp": millis(self.clock),
        }
        return self.stamp(self.manager.append_message(message)), call_ids

    def _usage(self, written_chars: int) -> dict[str, Any]:
        fresh = self.rng.randrange(600, 3200)
        output = max(40, written_chars // 4) + self.rng.randrange(60, 700)
        cache_write = self.rng.randrange(400, 2800) if self.model.startswith("anthropic") else 0
        cache_read = self.context_tokens
        self.context_tokens += fresh + output + self.rng.randrange(500, 2500)
        prices = PRICES[self.model]
        parts = [
            count * price / 1_000_000
            for count, price in zip((fresh, output, cache_read, cache_write), prices, strict=True)
        ]
        return {
            "input": fresh,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "totalTokens": fresh + output + cache_read + cache_write,
            "cost": {
                "input": round(parts[0], 6),
                "output": round(parts[1], 6),
                "cacheRead": round(parts[2], 6),
                "cacheWrite": round(parts[3], 6),
                "total": round(sum(parts), 6),
            },
        }

    def tool(
        self, call_id: str, name: str, text: str, error: bool = False, image: bytes | None = None
    ) -> str:
        self.wait(1, 40)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if image is not None:
            content.append(_image_block(image))
        message = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": content,
            "isError": error,
            "timestamp": millis(self.clock),
        }
        return self.stamp(self.manager.append_message(message))

    def act(
        self,
        name: str,
        arguments: dict[str, Any],
        result: str,
        text: str | None = None,
        thinking: str | None = None,
        error: bool = False,
        image: bytes | None = None,
    ) -> str:
        """An assistant turn with one tool call and its result; returns the assistant entry."""
        entry_id, (call_id,) = self.assistant(text, thinking, ((name, arguments),))
        self.tool(call_id, name, result, error, image)
        return entry_id

    def artifact(self, content: str, tool_type: str) -> str:
        return self.manager.save_artifact(content, tool_type)

    def finish(self, title: str | None = None) -> str:
        manager = self.manager
        if title:
            manager.set_session_name(title, source="auto")
        manager.close()
        written = manager.get_session_file()
        assert written is not None
        records = read_jsonl_file(written)
        renamed = self._fixed_ids(records)
        header = records[0]
        header["id"] = snowflake_id(self.start, self.ids)
        header["timestamp"] = iso_millis(self.start)
        blobs = BlobStore(get_blobs_dir(self.agent_dir))
        for entry in records[1:]:
            moment = self.times.get(entry["id"], self.clock)
            entry["timestamp"] = iso_millis(moment)
            for key in ID_FIELDS:
                if entry.get(key) in renamed:
                    entry[key] = renamed[entry[key]]
            for digest in blob_refs(entry):
                set_mtime(blobs.path_for(digest), moment)
        path = os.path.join(
            os.path.dirname(written), session_file_name(header["timestamp"], header["id"])
        )
        write_atomically(FileSessionStorage(), path, (dumps_line(record) for record in records))
        os.unlink(written)
        if os.path.isdir(artifacts_dir_for(written)):
            os.rename(artifacts_dir_for(written), artifacts_dir_for(path))
            for name in os.listdir(artifacts_dir_for(path)):
                set_mtime(os.path.join(artifacts_dir_for(path), name), self.clock)
        set_mtime(path, self.clock)
        return path

    def _fixed_ids(self, records: list[dict[str, Any]]) -> dict[str, str]:
        """Old entry id -> a new one from ``ids``, unique in the session; the story's times move
        to the new ids."""
        renamed: dict[str, str] = {}
        for entry in records[1:]:
            new = f"{self.ids.getrandbits(32):08x}"
            while new in renamed.values():
                new = f"{self.ids.getrandbits(32):08x}"
            renamed[entry["id"]] = new
        self.times = {renamed[old]: moment for old, moment in self.times.items()}
        for entry in records[1:]:
            entry["id"] = renamed[entry["id"]]
        return renamed


# The fields of an entry that hold the id of another entry (compatibility: Session file format as
# in the reference).
ID_FIELDS = ("parentId", "targetId", "firstKeptEntryId", "fromId")


def snowflake_id(moment: datetime, ids: random.Random) -> str:
    """A session id as the agent makes it at ``moment`` (a Snowflake), the sequence from ``ids``."""
    since_epoch = millis(moment) - _SNOWFLAKE_EPOCH_MS
    return f"{(since_epoch << 22) | ids.getrandbits(22):016x}"


def blob_refs(value: Any) -> Iterator[str]:
    """The hash of every blob reference anywhere in ``value``."""
    if isinstance(value, dict):
        for item in value.values():
            yield from blob_refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from blob_refs(item)
    elif isinstance(value, str):
        digest = parse_blob_ref(value)
        if digest is not None:
            yield digest


def set_mtime(path: str, moment: datetime) -> None:
    """Give ``path`` the story's time ``moment`` (access and modification)."""
    os.utime(path, (moment.timestamp(), moment.timestamp()))


def _image_block(data: bytes) -> dict[str, Any]:
    return {
        "type": "image",
        "data": base64.b64encode(data).decode("ascii"),
        "mimeType": "image/png",
    }
