"""``xcsh-store serve`` run as a process over an agent dir, and its pages fetched with the token
(the secrets tests: what the web app shows)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

# The token the tests give serve (--token), and send with each request.
TOKEN = "test-token-0123456789"


def serve(agent_dir: Path, *options: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``xcsh-store serve`` over ``agent_dir`` on a free port, as a process, until the generator
    is closed: its address and the process."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), "serve",
         "--port", str(port), "--json", *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        json.loads(process.stdout.readline())
        base = f"http://127.0.0.1:{port}"
        end = time.monotonic() + 60
        while True:
            try:
                fetch(base + "/")
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < end
                time.sleep(0.1)
        yield base, process
    finally:
        process.terminate()
        process.wait(timeout=30)


def fetch(url: str) -> str:
    """The page at ``url``, asked with the token."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode("utf-8")
