"""Hostile session text never reaches the terminal raw: every verb, with colour on and off.

The fixture's text, cwd, title, model, label, project folder, file names, artifact and prompt
history hold terminal escapes (OSC title, OSC-8 link, CSI clear screen), BEL, backspace, CR, a
newline that would forge a line, a C1 CSI and bidi overrides. ``--json`` keeps them exact.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from pty_terminal import run_in_pty
from session_builder import append, header, message, write_session

from xcsh_store.cli import cli
from xcsh_store.cli.output.safe import Shown, one_line, shown, styled, visible, visible_text
from xcsh_store.index import SessionIndex

# No slash: this one is also a file and folder name.
NAME_PAYLOAD = "\x1b]0;owned\x07\x1b[2J\x08\x08\rX\u202eexe.txt\u2066\x9b1m"
PAYLOAD = NAME_PAYLOAD + "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\\x1b[8mhidden"
FORGED = "Session forged-line"
CWD = "/work/app\x1b]0;cwd\x07\n" + FORGED + "\u202e"
# The colours the CLI writes (select graphic rendition); a session's are escaped.
OWN_STYLE = re.compile(r"\x1b\[[0-9;]*m")
# What must never be written raw (after the verb's own colours are taken out).
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    agent_dir = tmp_path / f"agent{NAME_PAYLOAD}"
    monkeypatch.setenv("XCSH_AGENT_DIR", str(agent_dir))
    folder = agent_dir / "sessions" / f"--work-{NAME_PAYLOAD}--"
    path = folder / f"2026-01-01T00-00-00-000Z_s1{NAME_PAYLOAD}.jsonl"
    label = {"type": "label", "id": "e5", "parentId": "e2", "targetId": "e2", "label": PAYLOAD,
             "timestamp": "2026-01-01T00:05:00.000Z"}  # fmt: skip
    write_session(
        path,
        [
            header("s1" + NAME_PAYLOAD, cwd=CWD, title=PAYLOAD),
            message("e1", None, "user", "needle " + PAYLOAD),
            message("e2", "e1", "assistant", "needle " + PAYLOAD, model=PAYLOAD),
            label,
            message("e4", "e1", "user", "other branch " + PAYLOAD),
        ],
    )
    artifacts = Path(str(path)[: -len(".jsonl")])
    artifacts.mkdir()
    (artifacts / "0.log").write_text("line one " + PAYLOAD + "\nline two\n")
    write_session(folder / f"old{NAME_PAYLOAD}.jsonl", [{"type": "session", "id": "v1",
                  "timestamp": "2026-01-01T00:00:00.000Z", "cwd": CWD}])  # fmt: skip
    run("history", "add", PAYLOAD, "--cwd", CWD)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    # Not synced: `verify` names the file.
    append(path, message("e6", "e4", "user", "later " + PAYLOAD))
    return {"path": str(path)}


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def verb_lines(path: str) -> list[list[str]]:
    return [
        ["ls"],
        ["search", "needle"],
        ["show", path],
        ["show", path, "--tree"],
        ["show", path, "--context"],
        ["show", "nothing" + PAYLOAD],
        ["cat", "artifact://0", "--session", path],
        ["cat", "artifact://0", "--session", path, "--raw"],
        ["history", "recent"],
        ["history", "search", "owned"],
        ["history", "recent", "--sessions"],
        ["usage", "--by", "model"],
        ["usage", "--by", "project", "--chart"],
        ["gc"],
        ["verify"],
        ["migrate", "--dry-run"],
        ["doctor"],
        ["sql", "SELECT title, cwd, path, model FROM sessions JOIN messages USING (file_id)"],
        ["sync"],
    ]


@pytest.mark.parametrize("colour", ["never", "always"])
def test_no_verb_writes_a_control_character_from_a_session(hostile, colour):
    for args in verb_lines(hostile["path"]):
        result = run("--color", colour, *args)
        assert result.exit_code in (0, 1), (args, result.output)
        for stream in (result.stdout, result.stderr):
            shown = OWN_STYLE.sub("", stream) if colour == "always" else stream
            assert not RAW.search(shown), (args, RAW.search(shown), stream)
            assert not re.search(f"^{FORGED}", shown, re.MULTILINE), (args, stream)


def test_the_hostile_text_is_shown_escaped(hostile):
    text = run("--color", "never", "show", hostile["path"]).stdout
    assert "\\x1b]0;owned\\x07" in text and "\\u202e" in text and "\\n" + FORGED in text


def test_search_keeps_its_highlight_marks(hostile):
    assert "«needle»" in run("search", "needle").stdout


def test_json_output_stays_exact(hostile):
    sessions = json.loads(run("ls", "--json").stdout)
    (session,) = [session for session in sessions if session["id"] == "s1" + NAME_PAYLOAD]
    assert (session["title"], session["cwd"]) == (PAYLOAD, CWD)
    assert json.loads(run("cat", "artifact://0", "-s", hostile["path"], "--json").stdout)[
        "text"
    ].startswith("line one " + PAYLOAD)


def test_the_sanitiser_escapes_controls_and_bidi_and_keeps_the_rest():
    assert visible("a\x1b[2Jb\x07\x08\r\n\t\u202ec\x9b é") == (
        "a\\x1b[2Jb\\x07\\x08\\r\\n\\t\\u202ec\\x9b é"
    )
    assert visible_text("one\ttwo\nthree\r") == "one\ttwo\nthree\\r"


def test_one_line_for_a_command_line_has_spaces_for_breaks_and_no_controls():
    text = "a\r\nb\n\nc\u2028d\te\x1b]52;c;eA\x07f\x9bg\u202eh\u2066i\ud800j 漢字"
    assert one_line(text) == "a b c d e]52;c;eAfghij 漢字"


def test_content_is_escaped_before_it_is_styled_and_joins_keep_it_so():
    line = styled("\x1b[36mid", True, fg="cyan") + " \x1b]0;t\x07"
    assert line == "\x1b[36m\\x1b[36mid\x1b[0m \\x1b]0;t\\x07"
    assert "\x1b[8m" + line == "\\x1b[8m" + line
    assert Shown(" ").join([line, "\x07"]) == line + " \\x07"
    assert styled("\x1b[2J", False, bold=True) == "\\x1b[2J"
    # Anything but these joins is plain text again, escaped whole: never raw.
    assert shown(f"{line}") == visible(line)


@pytest.mark.parametrize("colour", ["never", "always"])
def test_escaped_hostile_text_still_fits_the_terminal(hostile, colour, monkeypatch):
    """Escapes are longer than what they stand for: tables, charts and `show` are cut after the
    sanitiser. (Messages such as gc's summary are prose that the terminal wraps.)"""
    monkeypatch.setenv("COLUMNS", "80")
    for args in verb_lines(hostile["path"]):
        if args[0] not in ("ls", "search", "show", "history", "usage", "sql"):
            continue
        for line in run("--color", colour, *args).stdout.splitlines():
            shown = OWN_STYLE.sub("", line).replace("«", "").replace("»", "")
            assert len(shown) <= 80, (args, shown)


# --------------------------------------------------------------------------------------------
# In a real colour terminal (a pty): the verbs' own colours, the sessions' escapes inert

TITLE_SET = "\x1b]0;evil\x07"
CLEAR = "\x1b[2J"
# What the CLI's own colours would look like had the sanitiser escaped them.
ESCAPED_STYLE = re.compile(r"\\x1b\[[0-9;]*m")
# Written raw, an escape sequence that is not a colour (a session's), or a bell.
RAW_SEQUENCE = re.compile(r"\x1b(?!\[[0-9;]*m)|\x07")


@pytest.fixture
def evil(agent_dir: Path) -> Path:
    """A branched, labelled session whose title, cwd, model, texts and label set the terminal's
    title and clear its screen."""
    path = agent_dir / "sessions" / "--work-evil--" / "2026-01-01T00-00-00-000Z_evil0001.jsonl"
    label = {"type": "label", "id": "e5", "parentId": "e2", "targetId": "e2",
             "label": "mark" + TITLE_SET, "timestamp": "2026-01-01T00:05:00.000Z"}  # fmt: skip
    write_session(
        path,
        [
            header("evil0001", cwd="/work/evil" + CLEAR, title="title " + TITLE_SET + CLEAR),
            message("e1", None, "user", f"needle {TITLE_SET} then {CLEAR} cleared"),
            message("e2", "e1", "assistant", f"needle answer {CLEAR}", model="m" + TITLE_SET),
            label,
            message("e4", "e1", "user", f"needle on another branch {TITLE_SET}"),
        ],
    )
    run("history", "add", f"needle prompt {TITLE_SET}", "--cwd", "/work/evil")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return path


STYLED_VERBS = (
    ("ls",),
    ("search", "needle"),
    ("show", "evil0001"),
    ("show", "evil0001", "--tree"),
    ("show", "evil0001", "--leaf", "e4", "--tree"),
    ("show", "evil0001", "--context"),
    ("usage", "--by", "model"),
    ("usage", "--by", "model", "--chart"),
    ("verify",),
    ("doctor",),
)


@pytest.mark.parametrize("verb", STYLED_VERBS, ids=" ".join)
def test_a_colour_terminal_gets_the_verbs_colours_and_the_sessions_escapes_inert(evil, verb):
    code, shown = run_in_pty(verb, 80)
    assert code in (0, 1), shown
    assert "\x1b[" in shown, "a terminal is coloured"
    assert not ESCAPED_STYLE.search(shown), "the CLI's own colours were escaped"
    assert not RAW_SEQUENCE.search(shown), "a session's escape reached the terminal"


def test_the_sessions_escapes_are_shown_as_text_in_a_colour_terminal(evil):
    shown = "".join(run_in_pty(verb, 80)[1] for verb in STYLED_VERBS[:4])
    assert "\\x1b]0;evil\\x07" in shown and "\\x1b[2J" in shown


def test_the_demo_tour_in_a_colour_terminal_shows_no_escape_as_text(tmp_path):
    code, shown = run_in_pty(["demo"], 80, cwd=tmp_path)
    assert code == 0, shown
    assert shown.count("\x1b[") > 100
    assert not ESCAPED_STYLE.search(shown) and "\\x1b" not in shown
