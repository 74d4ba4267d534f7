"""A running ``xcsh-store watch --json`` process and the lines it prints (test_watch.py, the
agents' tests that watch a live file)."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("watchfiles")


DEADLINE = 60.0  # seconds; generous, so that a loaded machine only makes the test slower


class Watch:
    """A running ``xcsh-store watch --json`` and the lines it printed so far."""

    def __init__(self, agent_dir: Path, *extra: str) -> None:
        self.agent_dir = agent_dir
        self.process = subprocess.Popen(
            [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), "watch", "--json",
             *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        self.lines: list[dict[str, Any]] = []
        self._arrived: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_for(lambda line: line["change"] == "synced" and line["reason"] == "start")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self._arrived.put(json.loads(raw))

    def wait_for(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first line (printed so far or later) that ``wanted`` accepts."""
        for line in self.lines:
            if wanted(line):
                return line
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            try:
                line = self._arrived.get(timeout=0.1)
            except queue.Empty:
                assert self.process.poll() is None, self.process.stderr.read().decode()
                continue
            self.lines.append(line)
            if wanted(line):
                return line
        raise AssertionError(f"no such line in {self.lines}")

    def stop(self, number: int = signal.SIGTERM) -> int:
        self.process.send_signal(number)
        return self.process.wait(timeout=DEADLINE)
