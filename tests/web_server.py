"""``xcsh-store serve`` run as a process for the web tests (uvicorn on a free port, as a user
runs it), and requests to it with a raw HTTP client that sends any Host or Origin header."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

DEADLINE = 60.0
# The app answers to loopback's names only (DNS rebinding): the test client names one.
LOCAL = "http://127.0.0.1:8765"


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    printed: dict[str, object]  # the line of JSON serve printed when it was ready
    output: dict[str, str] = field(default_factory=dict)  # stdout and stderr, once stopped

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def request(
        self, path: str, headers: dict[str, str] | None = None, timeout: float = DEADLINE
    ) -> Response:
        """GET ``path`` with exactly ``headers`` (Host included: 127.0.0.1:port by default),
        waiting at most ``timeout`` seconds for each read."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
            for name, value in {"Host": self.host, **(headers or {})}.items():
                connection.putheader(name, value)
            connection.endheaders()
            response = connection.getresponse()
            # The live stream never ends: its first line is enough.
            stream = response.getheader("content-type", "").startswith("text/event-stream")
            body = response.readline() if stream else response.read()
            return Response(response.status, response.headers, body)
        finally:
            connection.close()

    def peak_memory_kb(self) -> int:
        """The server process's peak resident set (VmHWM), in kB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_server(
    agent_dir: Path,
    *arguments: str,
    env: dict[str, str] | None = None,
    program: tuple[str, ...] = (sys.executable, "-m", "xcsh_store"),
) -> Iterator[Server]:
    """``xcsh-store serve --json --port N ARGUMENTS`` (``program``: another that takes the
    same arguments) until the block ends, then stopped with SIGTERM unless the block stopped
    it (it must exit 0 within DEADLINE); its output is in ``server.output`` after that."""
    port = free_port()
    process = subprocess.Popen(
        [*program, "--agent-dir", str(agent_dir), "serve", "--json", "--port", str(port),
         *arguments],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    try:
        line = process.stdout.readline()
        assert line, process.stderr.read().decode()
        server = Server(process, port, json.loads(line))
        end = time.monotonic() + DEADLINE
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < end, process.stderr.read()
                time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
        try:
            stdout, stderr = process.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            process.kill()  # a server that does not stop is a failure, never a leftover
            process.communicate()
            raise
    server.output = {"stdout": line.decode() + stdout.decode(), "stderr": stderr.decode()}
    assert process.returncode == 0, server.output
