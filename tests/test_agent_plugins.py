"""Agents as plugins (issue 27 item 4): a third-party distribution, installed for real (a
``.dist-info`` with an entry point in the group ``xcsh_store.agents`` on the path of a CLI
subprocess, found by importlib.metadata), adds an agent of each kind that is not JSON lines
(tests/agent_plugin/chat_kinds.py: document, tree, SQLite, Markdown); sync, ls, show, search,
usage and verify work for each through the generic path, and a broken plugin costs one warning
line."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PLUGIN = Path(__file__).parent / "agent_plugin" / "chat_kinds.py"
KINDS = {
    "docchat": ("document", "DOCCHAT_DIR", "doc-1", "zeppelin"),
    "treechat": ("tree", "TREECHAT_DIR", "tree-1", "gondola"),
    "sqlchat": ("sqlite", "SQLCHAT_DIR", "sql-1", "walrus"),
    "mdchat": ("markdown", "MDCHAT_DIR", "m1", "kraken"),
}


def install(site: Path, entry_points: str) -> None:
    """The plugin as an installed distribution: its module and its metadata on the path."""
    site.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(PLUGIN, site / "chat_kinds.py")
    info = site / "xcsh_chat_kinds-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: xcsh-chat-kinds\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[xcsh_store.agents]\n{entry_points}")


ENTRY_POINTS = "".join(
    f"{name} = chat_kinds:{name.upper()}\n" for name in ("docchat", "treechat", "sqlchat", "mdchat")
)


def write_sessions(home: Path) -> dict[str, Path]:
    folders = {name: home / name for name in KINDS}
    for folder in folders.values():
        folder.mkdir(parents=True)
    chat = {
        "id": "doc-1",
        "title": "Doc title",
        "cwd": "/work/doc",
        "created": "2026-01-02T10:00:00.000Z",
        "messages": [
            {"role": "user", "text": "how do I rotate the zeppelin logs",
             "time": "2026-01-02T10:00:01.000Z"},
            {"role": "assistant", "text": "use logrotate with copytruncate",
             "time": "2026-01-02T10:00:02.000Z", "model": "claude-sonnet-4-5",
             "usage": {"input": 100, "output": 20, "cost": 0.5}},
        ],
    }  # fmt: skip
    (folders["docchat"] / "project.chat.json").write_text(json.dumps(chat))
    tree = folders["treechat"] / "t1"
    (tree / "messages").mkdir(parents=True)
    (tree / "session.json").write_text(
        json.dumps({"id": "tree-1", "cwd": "/work/tree", "created": "2026-01-03T10:00:00.000Z"})
    )
    (tree / "messages" / "1.json").write_text(
        json.dumps({"role": "user", "text": "where is the gondola config",
                    "time": "2026-01-03T10:00:01.000Z"})
    )  # fmt: skip
    (tree / "messages" / "2.json").write_text(
        json.dumps({"role": "assistant", "text": "in etc, beside the cable car",
                    "time": "2026-01-03T10:00:02.000Z", "model": "claude-sonnet-4-5",
                    "input": 7, "output": 3, "cost": None})
    )  # fmt: skip
    with sqlite3.connect(folders["sqlchat"] / "chats.db") as connection:
        connection.executescript(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT, title TEXT, created TEXT);"
            "CREATE TABLE messages (session_id TEXT, role TEXT, text TEXT, time TEXT,"
            " model TEXT, input INTEGER, output INTEGER);"
            "INSERT INTO sessions VALUES ('sql-1', '/work/sql', 'Sql title',"
            " '2026-01-04T10:00:00.000Z');"
            "INSERT INTO messages VALUES ('sql-1', 'user', 'migrate the walrus table',"
            " '2026-01-04T10:00:01.000Z', NULL, NULL, NULL);"
            "INSERT INTO messages VALUES ('sql-1', 'assistant', 'ALTER TABLE walrus ADD tusk',"
            " '2026-01-04T10:00:02.000Z', 'claude-sonnet-4-5', 11, 5);"
        )
    connection.close()
    (folders["mdchat"] / "m1.chat.md").write_text(
        "#### summon the kraken\n\nThe kraken rises from the deep.\n\n"
    )
    return folders


class Cli:
    def __init__(self, tmp_path: Path, entry_points: str = ENTRY_POINTS) -> None:
        site = tmp_path / "site"
        install(site, entry_points)
        self.folders = write_sessions(tmp_path / "chats")
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(site), str(Path(__file__).resolve().parents[1])]
        )
        self.env["XCSH_AGENT_DIR"] = str(tmp_path / "agent")
        for name, (_kind, variable, _id, _word) in KINDS.items():
            self.env[variable] = str(self.folders[name])

    def run(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "xcsh_store", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == code, done.stdout + done.stderr
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    cli = Cli(tmp_path_factory.mktemp("plugins"))
    cli.run("sync", "--init", "--workers", "1")
    return cli


def test_the_plugins_agents_are_choices_and_in_the_help(synced: Cli):
    shown = synced.run("sync", "--help").stdout
    assert "DocChat" in shown and "MdChat" in shown
    assert "docchat" in synced.run("ls", "--help").stdout


def test_sync_lists_a_session_of_each_kind(synced: Cli):
    items = synced.json("ls", "--limit", "0")
    assert sorted(item["agent"] for item in items) == sorted(KINDS)


@pytest.mark.parametrize("agent", sorted(KINDS))
def test_search_finds_a_word_of_each_kind(synced: Cli, agent: str):
    word = KINDS[agent][3]
    hits = synced.json("search", word, "--agent", agent)
    assert hits and {hit["agent"] for hit in hits} == {agent}
    assert all(word in hit["snippet"] for hit in hits)


@pytest.mark.parametrize("agent", sorted(KINDS))
def test_show_reads_each_kinds_entries_again(synced: Cli, agent: str):
    shown = synced.run("show", KINDS[agent][2]).stdout
    assert KINDS[agent][3] in shown


def test_show_tree_of_a_sqlite_session_is_a_chain(synced: Cli):
    shown = synced.json("show", "sql-1", "--tree")
    assert len(shown["roots"]) == 1
    assert len(shown["nodes"]) == 3  # the session record, the prompt, the answer


def test_titles_and_projects_come_from_the_plugin(synced: Cli):
    items = {item["agent"]: item for item in synced.json("ls", "--limit", "0")}
    assert items["docchat"]["title"] == "Doc title"
    assert items["sqlchat"]["title"] == "Sql title"
    assert items["treechat"]["cwd"] == "/work/tree"


def test_usage_by_agent_adds_each_kinds_tokens(synced: Cli):
    rows = {row["key"]: row for row in synced.json("usage", "--by", "agent")["rows"]}
    assert (rows["docchat"]["input_tokens"], rows["docchat"]["output_tokens"]) == (100, 20)
    assert rows["docchat"]["cost"] == 0.5  # recorded by the agent
    assert rows["treechat"]["input_tokens"] == 7
    assert rows["sqlchat"]["output_tokens"] == 5


def test_verify_is_clean(synced: Cli):
    assert synced.json("verify")["clean"] is True


def test_a_new_sqlite_row_and_a_changed_document_are_read_again(tmp_path: Path):
    cli = Cli(tmp_path)
    cli.run("sync", "--init", "--workers", "1")
    with sqlite3.connect(cli.folders["sqlchat"] / "chats.db") as connection:
        connection.execute(
            "INSERT INTO messages VALUES ('sql-1', 'user', 'and the narwhal index?',"
            " '2026-01-04T11:00:00.000Z', NULL, NULL, NULL)"
        )
    connection.close()
    document = cli.folders["docchat"] / "project.chat.json"
    chat = json.loads(document.read_text())
    chat["messages"].append({"role": "user", "text": "and the blimp ones", "time": None})
    document.write_text(json.dumps(chat))
    report = cli.json("sync", "--workers", "1")
    assert report["files_changed"] == 2
    assert cli.json("search", "narwhal") and cli.json("search", "blimp")
    assert cli.json("verify")["clean"] is True


def test_sync_writes_nothing_in_the_plugins_folders(tmp_path: Path):
    cli = Cli(tmp_path)
    before = _snapshot(tmp_path / "chats")
    cli.run("sync", "--init", "--workers", "1")
    assert _snapshot(tmp_path / "chats") == before


def _snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    return {
        str(path): (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_mode)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_a_broken_plugin_costs_one_warning_line(tmp_path: Path):
    cli = Cli(tmp_path, ENTRY_POINTS + "broken = chat_kinds_gone:AGENT\nnameless = json:dumps\n")
    done = cli.run("sync", "--init", "--workers", "1")
    warnings = [line for line in done.stderr.splitlines() if "left out" in line]
    assert len(warnings) == 2, done.stderr
    expected = "agent plugin broken (chat_kinds_gone:AGENT) left out: ModuleNotFoundError"
    assert expected in warnings[0]
    assert len(cli.json("ls", "--limit", "0")) == len(KINDS)


def test_a_session_the_plugin_cannot_read_is_unreadable_not_the_sync(tmp_path: Path):
    cli = Cli(tmp_path)
    (cli.folders["docchat"] / "bad.chat.json").write_text("{not json")
    report = cli.json("sync", "--init", "--workers", "1")
    bad = str(cli.folders["docchat"] / "bad.chat.json")
    assert "agent plugin docchat failed: JSONDecodeError" in report["unreadable"][bad]
    assert len(cli.json("ls", "--limit", "0")) == len(KINDS)


def test_the_sessions_of_an_uninstalled_plugin_go_at_the_next_sync(tmp_path: Path):
    cli = Cli(tmp_path)
    cli.run("sync", "--init", "--workers", "1")
    cli.env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])  # the plugin is gone
    assert "run sync" in cli.run("--no-sync", "show", "sql-1", code=1).stderr
    cli.run("sync", "--workers", "1")
    assert cli.json("ls", "--limit", "0") == []


def _sync_lines(
    cli: Cli, agent: str, lines: list[dict[str, Any]]
) -> subprocess.CompletedProcess[str]:
    """A JSONL file of ``lines`` (``one.jsonl``) in a root added as ``agent:DIR``, synced."""
    folder = Path(cli.env["XCSH_AGENT_DIR"]).parent / agent
    folder.mkdir()
    (folder / "one.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return cli.run("sync", "--init", "--workers", "1", "--add-root", f"{agent}:{folder}")


def test_a_plain_jsonl_reader_of_the_reader_protocol_is_a_plugin(tmp_path: Path):
    cli = Cli(tmp_path, ENTRY_POINTS + "plainlines = chat_kinds:PLAINLINES\n")
    lines = [
        {"plain": True, "role": "user", "text": "where did the ocelot go"},
        {"plain": True, "role": "assistant", "text": "behind the server rack"},
    ]
    _sync_lines(cli, "plainlines", lines)
    hits = cli.json("search", "ocelot")
    assert [hit["agent"] for hit in hits] == ["plainlines"]


def test_a_plugin_failing_on_records_costs_those_records_and_one_line(tmp_path: Path):
    cli = Cli(tmp_path, ENTRY_POINTS + "faultylines = chat_kinds:FAULTYLINES\n")
    lines = [
        {"faulty": True, "role": "user", "text": "the capybara is fine"},
        {"faulty": True, "role": "assistant", "text": "boom goes the capybara"},
        {"faulty": True, "role": "assistant", "text": "boom again"},
    ]
    done = _sync_lines(cli, "faultylines", lines)
    faults = [line for line in done.stderr.splitlines() if "agent plugin faultylines" in line]
    assert len(faults) == 1, done.stderr
    hits = cli.json("search", "capybara")
    assert [hit["snippet"] for hit in hits] == ["the «capybara» is fine"]
    assert len(cli.json("ls", "--limit", "0")) == len(KINDS) + 1
    shown = cli.run("show", "one").stdout
    assert shown.count("unread") == 2


WRONG = ("usage", "id", "timestamp", "title", "session")


def test_a_plugin_giving_wrong_types_costs_those_records_and_one_line(tmp_path: Path):
    cli = Cli(tmp_path, ENTRY_POINTS + "wronglines = chat_kinds:WRONGLINES\n")
    lines = [
        {"wrong": None, "role": "user", "text": "the axolotl is fine"},
        *({"wrong": wrong, "role": "assistant", "text": f"the axolotl {wrong}"} for wrong in WRONG),
    ]
    done = _sync_lines(cli, "wronglines", lines)
    faults = [line for line in done.stderr.splitlines() if "agent plugin wronglines" in line]
    assert len(faults) == 1 and "PluginOutputError: usage[0] is 'lots'" in faults[0], done.stderr
    hits = cli.json("search", "axolotl")
    assert [hit["snippet"] for hit in hits] == ["the «axolotl» is fine"]
    assert cli.run("show", "one").stdout.count("unread") == len(WRONG)
    (session,) = [item for item in cli.json("ls", "--limit", "0") if item["agent"] == "wronglines"]
    assert session["session_id"] == "one"


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("usage", (1, 2, 3, "4", 0, None), "usage[3] is '4', not a number"),
        ("usage", (1, 2, 3, 4, 0, float("nan")), "usage[5] is nan, not a number"),
        ("usage", (1, 2), "usage is (1, 2), not six figures"),
        ("usage", (True, 2, 3, 4, 0, None), "usage[0] is True, not a number"),
        ("title", 7, "title is 7, not text"),
        ("model", b"gpt", "model is b'gpt', not text"),
        ("leaf_summary", ("leaf",), "leaf_summary is ('leaf',), not (leaf id, summary)"),
        ("rewind_turns", -1, "rewind_turns is -1, not a count"),
        ("chained", 1, "chained is 1, not True or False"),
    ],
)
def test_a_records_wrong_field_is_named(field: str, value: Any, problem: str):
    from xcsh_store.agents import AgentEntry
    from xcsh_store.agents.base import entry_problem

    found = AgentEntry({"type": "message", "id": "e1"})
    assert entry_problem(found) is None
    setattr(found, field, value)
    assert entry_problem(found) == problem


def test_a_record_that_is_not_an_entry_is_named():
    from xcsh_store.agents.base import entry_problem

    problem = entry_problem({"type": "message"})
    assert problem == "read() gave {'type': 'message'}, not an AgentEntry"


def test_a_plugin_calling_sys_exit_costs_those_records_not_the_sync(tmp_path: Path):
    cli = Cli(tmp_path, ENTRY_POINTS + "exitinglines = chat_kinds:EXITINGLINES\n")
    lines = [
        {"exiting": True, "role": "user", "text": "the quokka is fine"},
        {"exiting": True, "role": "assistant", "text": "exit stage left"},
    ]
    done = _sync_lines(cli, "exitinglines", lines)
    faults = [line for line in done.stderr.splitlines() if "agent plugin exitinglines" in line]
    assert len(faults) == 1 and "SystemExit" in faults[0], done.stderr
    assert [hit["snippet"] for hit in cli.json("search", "quokka")] == ["the «quokka» is fine"]
    assert len(cli.json("ls", "--limit", "0")) == len(KINDS) + 1


def test_a_plugin_calling_sys_exit_costs_the_session_it_reads_or_itself(tmp_path: Path):
    entry_points = "exitingdoc = chat_kinds:EXITINGDOC\nexiting = chat_kinds:ExitingAtLoad\n"
    cli = Cli(tmp_path, ENTRY_POINTS + entry_points)
    folder = tmp_path / "exiting"
    folder.mkdir()
    (folder / "gone.chat.json").write_text("{}")
    cli.env["EXITINGDOC_DIR"] = str(folder)
    done = cli.run("sync", "--init", "--workers", "1", "--json")
    assert "agent plugin exiting (chat_kinds:ExitingAtLoad) left out: SystemExit: 3" in done.stderr
    report = json.loads(done.stdout)
    failure = report["unreadable"][str(folder / "gone.chat.json")]
    assert failure == "agent plugin exitingdoc failed: SystemExit: 3"
    assert len(cli.json("ls", "--limit", "0")) == len(KINDS)
