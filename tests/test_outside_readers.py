"""Outside readers of index.db (index.md, guarantee 5): with the SQLite of this machine (3.40 on
Debian 12), the sqlite3 command, sqlite-utils and Datasette read every table and search the
full-text index; Datasette, with xcsh-store's plugin, shows the text and snippets of hits; the
recipes of docs/recipes.md run as written; doctor says what works. Every reader runs in a child
process (guarantee 6: this one holds the index through apsw)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from xcsh_store.cli import cli
from xcsh_store.demo.build import DEMO_NOW, build_demo
from xcsh_store.demo.folder import prepare_demo_dir
from xcsh_store.index import SessionIndex

RECIPES = Path(__file__).resolve().parent.parent / "docs" / "recipes.md"
BIN = Path(sys.executable).parent
CHILD = Path(__file__).with_name("datasette_child.py")
# A bound for a hang (Datasette's start-up), never a measurement.
HANG_SECONDS = 60
QUERY = "session cookie"
MATCHES = (
    "SELECT e.pk FROM entries_fts JOIN entries AS e ON e.pk = entries_fts.rowid"
    " WHERE entries_fts MATCH ? ORDER BY e.pk"
)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home whose agent dir (``~/.xcsh/agent``, as the recipes write it) holds the indexed
    demo."""
    home = tmp_path_factory.mktemp("readers") / "home"
    agent = home / ".xcsh" / "agent"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("XCSH_TERMINAL_ID", "pytest-terminal")
        prepare_demo_dir(str(agent))
        build_demo(str(agent), now=DEMO_NOW)
        with SessionIndex.open(str(agent)) as index:
            index.sync()
    yield home


def _index(home: Path) -> Path:
    return home / ".xcsh" / "agent" / "index.db"


def _environment(home: Path) -> dict[str, str]:
    """This test's environment (HOME and the agents' folders inside tmp, conftest.py) with the
    demo's home, and this installation's commands first on PATH."""
    environment = dict(os.environ, HOME=str(home))
    environment["XCSH_AGENT_DIR"] = str(home / ".xcsh" / "agent")
    environment["PATH"] = f"{BIN}{os.pathsep}{environment.get('PATH', '')}"
    return environment


def _matches(home: Path, query: str) -> list[int]:
    """What entries_fts finds for an FTS5 expression, through the store's own connection."""
    with SessionIndex.open(str(home / ".xcsh" / "agent"), read_only=True) as index:
        return [row[0] for row in index.connection.execute(MATCHES, (query,))]


def _run(home: Path, argv: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=_environment(home), capture_output=True, text=True, errors="replace",
        check=True, **options,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# The sqlite3 command and sqlite-utils


sqlite3_command = pytest.mark.skipif(
    shutil.which("sqlite3") is None, reason="the sqlite3 command is not installed"
)


TABLES = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"


@sqlite3_command
def test_the_sqlite3_command_reads_every_table_and_searches(home):
    db = str(_index(home))
    names = _run(home, ["sqlite3", "-readonly", db, TABLES]).stdout.split()
    assert {"entries_fts", "entries_vocab", "sessions", "usage_by_day"} <= set(names)
    for name in names:
        _run(home, ["sqlite3", "-readonly", "-bail", db, f'SELECT * FROM "{name}"'])
    found = _run(home, ["sqlite3", "-readonly", db, MATCHES.replace("?", "'cookie'")])
    assert [int(pk) for pk in found.stdout.split()] == _matches(home, "cookie") != []


def test_sqlite_utils_reads_every_table_and_searches(home):
    db = str(_index(home))
    counted = {
        row.get("table", row.get("view")): row["count"]
        for kind in ("tables", "views")
        for row in json.loads(_run(home, ["sqlite-utils", kind, db, "--counts"]).stdout)
    }
    assert counted["entries_fts"] == counted["entries_fts_docsize"] > 0
    assert counted["sessions"] == 13 and counted["usage_by_day"] > 0
    query = ["sqlite-utils", "query", db, MATCHES.replace("?", ":q"), "-p", "q", "cookie"]
    found = json.loads(_run(home, query).stdout)
    assert [row["pk"] for row in found] == _matches(home, "cookie")


# --------------------------------------------------------------------------------------------
# The recipes of docs/recipes.md


def _recipes() -> list[str]:
    """The shell blocks of docs/recipes.md."""
    text = RECIPES.read_text(encoding="utf-8")
    return re.findall(r"^```sh\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


@sqlite3_command
def test_the_recipes_run_as_written(home, tmp_path):
    """Every recipe but Datasette's (a server: next test), in a shell, on the demo."""
    blocks = [block for block in _recipes() if "datasette" not in block]
    assert len(blocks) == 2
    output = _run(home, ["bash", "-e", "-c", "\n".join(blocks)], cwd=tmp_path).stdout
    assert "│ 2026-11-29 │" in output  # usage_by_day
    assert "│ Fix the flaky login test │" in output  # the full-text search
    assert "[session] [cookie]" in output  # entry_snippet
    assert "anthropic   claude-sonnet-4-5" in output  # sqlite-utils
    assert (tmp_path / "sessions.csv").read_text().startswith("session_id,title,cost")


def _datasette_command() -> str:
    (block,) = [block for block in _recipes() if "datasette" in block]
    (command,) = [line for line in block.splitlines() if line.startswith("datasette ")]
    return command


def test_datasette_starts_as_the_recipes_say_browses_and_searches(home, tmp_path):
    """The real `datasette` command, with the stdlib SQLite of this machine."""
    sock = tmp_path / "datasette.sock"
    process = subprocess.Popen(
        ["bash", "-c", f"exec {_datasette_command()} --uds {sock}"],
        env=_environment(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        client = httpx.Client(transport=httpx.HTTPTransport(uds=str(sock)), base_url="http://ds")
        deadline = time.monotonic() + HANG_SECONDS
        while not _accepts(sock):
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            assert time.monotonic() < deadline, "Datasette did not start"
            time.sleep(0.1)
        versions = client.get("/-/versions.json").json()
        assert versions["sqlite"]["version"] == sqlite3.sqlite_version
        plugins = client.get("/-/plugins.json").json()
        assert "xcsh-store" in [plugin["name"] for plugin in plugins]
        facets = client.get("/index/sessions.json?_facet=project_dir").json()
        assert len(facets["facet_results"]["project_dir"]["results"]) == 4
        hits = client.get("/index/search.json", params={"q": QUERY, "_shape": "array"}).json()
        assert hits and all("[cookie]" in hit["snippet"] for hit in hits)
        assert {hit["session"] for hit in hits} == {"Fix the flaky login test"}
    finally:
        process.terminate()
        process.wait(timeout=HANG_SECONDS)


def _accepts(sock: Path) -> bool:
    if not sock.exists():
        return False
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(sock))
        except OSError:
            return False
    return True


# --------------------------------------------------------------------------------------------
# Datasette's test client


def _datasette(home: Path, *urls: str) -> dict[str, Any]:
    found = _run(home, [sys.executable, str(CHILD), str(_index(home)), *urls]).stdout
    return json.loads(found)


def _store_rows(home: Path, sql: str, parameters: Any = ()) -> list[tuple[Any, ...]]:
    with SessionIndex.open(str(home / ".xcsh" / "agent"), read_only=True) as index:
        return [tuple(row) for row in index.connection.execute(sql, parameters)]


def test_every_table_and_view_browses_in_datasette(home):
    names = [name for (name,) in _store_rows(home, TABLES)]
    urls = ["/index.json", *(f"/index/{name}.json?_size=5" for name in names)]
    pages = _datasette(home, *urls)
    assert {url: status for url, (status, _body) in pages.items()} == dict.fromkeys(urls, 200)
    listed = {table["name"]: table for table in pages["/index.json"][1]["tables"]}
    # The full-text tables are Datasette's to hide; the others are there to browse.
    assert listed["entries_fts"]["hidden"] and not listed["entries"]["hidden"]


def test_the_search_of_the_plugin_finds_what_xcsh_store_search_finds(home):
    with SessionIndex.open(str(home / ".xcsh" / "agent"), read_only=True) as index:
        expected = {(hit.entry_id, hit.snippet) for hit in index.search(QUERY, limit=50)}
        phrase = [(hit.entry_id, hit.snippet) for hit in index.search('"the session"')]
    search = "/index/search.json?_shape=array&q="
    words, quoted = search + "session+cookie", search + "%22the+session%22"
    pages = _datasette(home, words, quoted, search)
    status, hits = pages[words]
    assert status == 200
    assert {(hit["entry_id"], hit["snippet"]) for hit in hits} == expected != set()
    assert {hit["role"] for hit in hits} >= {"user", "assistant"}
    # Best first, as xcsh-store search ranks them (bm25; the newest first among equals).
    assert [(hit["entry_id"], hit["snippet"]) for hit in pages[quoted][1]] == phrase != []
    assert pages[search] == [200, []]  # no words: nothing, and no error


def test_datasettes_search_box_searches_entries_and_messages(home):
    expected = _matches(home, '"cookie"')
    messages = {pk for (pk,) in _store_rows(home, "SELECT pk FROM messages")} & set(expected)
    entries = "/index/entries.json?_search=cookie&_shape=array&_size=max"
    in_messages = "/index/messages.json?_search=cookie&_shape=array&_size=max"
    pages = _datasette(home, entries, in_messages)
    assert sorted(row["pk"] for row in pages[entries][1]) == expected != []
    assert {row["pk"] for row in pages[in_messages][1]} == messages != set()


def test_datasette_sql_has_the_functions_of_the_store(home):
    sql = (
        "SELECT e.id, entry_text(e.pk) AS text, entry_snippet(e.pk, :q) AS snippet"
        " FROM entries_fts JOIN entries AS e ON e.pk = entries_fts.rowid"
        " WHERE entries_fts MATCH search_match(:q) ORDER BY e.pk"
    )
    expected = [list(row) for row in _store_rows(home, sql, {"q": QUERY})]
    url = "/index.json?" + str(httpx.QueryParams({"sql": sql, "q": QUERY, "_shape": "arrays"}))
    status, body = _datasette(home, url)[url]
    assert status == 200
    assert body["rows"] == expected and all(text for _id, text, _snippet in expected)


@sqlite3_command
def test_the_plugin_leaves_other_databases_alone(home, tmp_path):
    other = tmp_path / "other.db"
    _run(home, ["sqlite3", str(other), "CREATE TABLE entries (pk INTEGER PRIMARY KEY, id TEXT)"])
    urls = ["/other.json", "/other/search.json"]
    pages = json.loads(_run(home, [sys.executable, str(CHILD), str(other), *urls]).stdout)
    assert pages["/other.json"][0] == 200
    assert pages["/other/search.json"][0] == 404  # no canned query on it


# --------------------------------------------------------------------------------------------
# doctor


def test_doctor_says_what_the_readers_here_can_do(home):
    runner = CliRunner()
    agent = str(home / ".xcsh" / "agent")
    report = json.loads(runner.invoke(cli, ["--agent-dir", agent, "doctor", "--json"]).output)
    readers = {reader["reader"]: reader for reader in report["outside_readers"]["readers"]}
    python = readers["Python sqlite3"]
    assert python["sqlite"] == sqlite3.sqlite_version
    assert python["reads_every_table"] and python["search"] and python["unreadable"] == {}
    if shutil.which("sqlite3"):
        assert readers["sqlite3 command"]["reads_every_table"]
    assert report["outside_readers"]["datasette_plugin"] is True
    text = runner.invoke(cli, ["--agent-dir", agent, "doctor"]).output
    assert (
        f"  Python sqlite3 (sqlite-utils, Datasette), SQLite {sqlite3.sqlite_version}:"
        " every table ok · search ok"
    ) in text
    assert "with xcsh-store's plugin: search with text and snippets ok" in text


def test_doctor_leaves_no_side_files_behind(home):
    agent = home / ".xcsh" / "agent"
    with SessionIndex.open(str(agent)):
        pass  # the last connection to close removes what earlier readers left
    assert sorted(agent.glob("index.db-*")) == []
    CliRunner().invoke(cli, ["--agent-dir", str(agent), "doctor"])
    assert sorted(agent.glob("index.db-*")) == []


# An entries_fts no SQLite can read: an FTS5 option of no version, as contentless_delete was
# to SQLite 3.40.
_FUTURE_FTS = (
    "CREATE TABLE sessions (id); PRAGMA writable_schema = ON;"
    " INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES"
    " ('table', 'entries_fts', 'entries_fts', 0,"
    " 'CREATE VIRTUAL TABLE entries_fts USING fts5 (text, content = '''', future_option = 1)')"
)


@sqlite3_command
def test_doctor_names_what_a_reader_cannot_read(tmp_path):
    agent = tmp_path / "agent"
    (agent / "sessions").mkdir(parents=True)
    _run(tmp_path, ["sqlite3", str(agent / "index.db"), _FUTURE_FTS])
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent), "doctor", "--json"])
    readers = json.loads(result.output)["outside_readers"]["readers"]
    assert [reader["reader"] for reader in readers] == ["Python sqlite3", "sqlite3 command"]
    for reader in readers:
        assert reader["unreadable"] == {"entries_fts": 'unrecognized option: "future_option"'}
        assert not reader["reads_every_table"] and not reader["search"]
    text = CliRunner().invoke(cli, ["--agent-dir", str(agent), "doctor"]).output
    assert 'cannot read entries_fts (unrecognized option: "future_option") · search no' in text
