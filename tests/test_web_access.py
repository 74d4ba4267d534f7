"""Who can read ``xcsh-store serve``, against the real server (uvicorn as a process, a raw HTTP
client): a web page that rebinds its own name to 127.0.0.1 (DNS rebinding) gets nothing, nor
does a page of another site; the token comes from the environment or a private file, never
shows in ``ps`` or in what the server prints, and moves from the URL into a cookie."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from session_builder import flux_records, sessions_dir, write_session
from web_server import running_server

from xcsh_store.index import SessionIndex

pytest.importorskip("uvicorn")
from starlette.testclient import TestClient

from xcsh_store.web import create_app

TOKEN = "t0ken-4c1d-never-in-ps"
# Every kind of route: pages, the live stream, a blob, a static file.
ROUTES = ("/", "/session/sess-branched", "/search?q=plutonium", "/usage", "/live",
          "/blob/" + "0" * 64 + "?type=image/png", "/static/app.css")  # fmt: skip


@pytest.fixture
def agent(agent_dir: Path) -> Path:
    write_session(sessions_dir(agent_dir) / "branched.jsonl", flux_records())
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return agent_dir


def token_file(folder: Path, mode: int) -> Path:
    path = folder / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(mode)
    return path


def test_a_page_that_rebinds_its_name_to_loopback_reads_nothing(agent):
    with running_server(agent) as server:
        assert server.request("/").status == 200
        for route in ROUTES:
            for host in ("evil.example", f"evil.example:{server.port}", "127.0.0.1.evil.example",
                         f"user@127.0.0.1:{server.port}", ""):  # fmt: skip
                response = server.request(route, {"Host": host})
                assert response.status == 421, (route, host)
                assert len(response.body) < 100 and b"Flux" not in response.body
    assert "Traceback" not in server.output["stderr"]


def test_loopback_names_the_host_and_allowed_names_are_answered(agent):
    with running_server(agent, "--allow-host", "My-Box.lan") as server:
        for host in ("127.0.0.1", f"localhost:{server.port}", f"[::1]:{server.port}",
                     f"my-box.lan:{server.port}"):  # fmt: skip
            response = server.request("/session/sess-branched", {"Host": host})
            assert response.status == 200 and b"Flux capacitor" in response.body, host
        assert server.request("/", {"Host": "other-box.lan"}).status == 421


def test_a_page_of_another_site_cannot_open_the_live_stream(agent):
    with running_server(agent) as server:
        foreign = server.request("/live", {"Origin": f"http://evil.example:{server.port}"})
        assert foreign.status == 403 and b"retry" not in foreign.body
        assert server.request("/live", {"Origin": "null"}).status == 403
        # A page of another port of loopback is another site too.
        assert server.request("/live", {"Origin": "http://127.0.0.1:1"}).status == 403
        own = server.request("/live", {"Origin": f"http://{server.host}"})
        assert own.status == 200 and own.body.startswith(b"retry:")


def test_the_token_from_the_environment_stays_out_of_argv_and_output(agent):
    env = {**os.environ, "XCSH_STORE_TOKEN": TOKEN}
    with running_server(agent, env=env) as server:
        assert TOKEN not in Path(f"/proc/{server.process.pid}/cmdline").read_text()
        assert TOKEN not in str(server.printed["url"])
        assert server.request("/").status == 401
        assert server.request("/", {"Authorization": f"Bearer {TOKEN}x"}).status == 401
        assert server.request("/", {"Authorization": f"Bearer {TOKEN}"}).status == 200
        assert server.request(f"/?token={TOKEN}").status == 303
        assert server.request("/?token=wrong").status == 401
    assert TOKEN not in server.output["stdout"] + server.output["stderr"]


def test_the_token_file_must_be_private(agent, tmp_path):
    shared = token_file(tmp_path, 0o644)
    result = subprocess.run(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent), "serve",
         "--token-file", str(shared)], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    assert f"chmod 600 {shared}" in result.stderr and TOKEN not in result.stderr
    with running_server(agent, "--token-file", str(token_file(tmp_path, 0o600))) as server:
        assert TOKEN not in Path(f"/proc/{server.process.pid}/cmdline").read_text()
        assert server.request("/").status == 401
        assert server.request("/", {"Authorization": f"Bearer {TOKEN}"}).status == 200
        assert server.request(f"/session/sess-branched?token={TOKEN}").status == 303
    assert TOKEN not in server.output["stdout"] + server.output["stderr"]


def test_token_and_token_file_together_are_refused(agent, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent), "serve", "--token", "a",
         "--token-file", str(token_file(tmp_path, 0o600))], capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "--token and --token-file" in result.stderr


def test_the_token_in_a_url_becomes_a_strict_cookie_and_leaves_the_url(agent):
    with running_server(agent, "--token", TOKEN) as server:
        # Typed on the command line, it is printed (documented: visible in ps anyway).
        assert str(server.printed["url"]).endswith(f"?token={TOKEN}")
        moved = server.request(f"/session/sess-branched?leaf=a2&token={TOKEN}")
        assert moved.status == 303 and moved.headers["location"] == "/session/sess-branched?leaf=a2"
        cookie = moved.headers["set-cookie"]
        assert cookie.startswith(f"xcsh_store_token_{server.port}={TOKEN};")
        attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/"} <= attributes
        assert "secure" not in attributes  # plain http: a Secure cookie would never come back
        cookie_header = {"Cookie": cookie.split(";")[0]}
        page = server.request("/session/sess-branched?leaf=a2", cookie_header)
        assert page.status == 200 and b'id="entry-a2"' in page.body
        wrong = {"Cookie": f"xcsh_store_token_{server.port}=wrong"}
        assert server.request("/", wrong).status == 401
        # Another port's cookie is not this server's.
        other = {"Cookie": f"xcsh_store_token_{server.port + 1}={TOKEN}"}
        assert server.request("/", other).status == 401


def test_over_https_the_cookie_is_secure(agent):
    client = TestClient(
        create_app(str(agent), token=TOKEN), base_url="https://127.0.0.1", follow_redirects=False
    )
    moved = client.get(f"/?token={TOKEN}")
    assert moved.status_code == 303
    assert re.search(r";\s*Secure", moved.headers["set-cookie"], re.IGNORECASE)


def test_a_malformed_allowed_host_is_a_usage_error(agent):
    result = subprocess.run(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent), "serve",
         "--allow-host", "evil.example/path"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "--allow-host" in result.stderr
