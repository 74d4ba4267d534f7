"""``xcsh-store pick`` in a real terminal (pick_terminal.py: a pty driven by pexpect, the
screen kept by pyte), as a person uses it: typing narrows the hits, the arrows move, Enter
prints the choice on stdout and nothing else, Esc prints nothing, the window can be resized,
NO_COLOR gives no colour, and hostile session text is shown inert in an 80x24 layout."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from pick_terminal import XCSH_STORE, PickTerminal, Terminal, colour_sequences
from session_builder import header, message_at, sessions_dir, write_session

from xcsh_store.cli import cli

KEYS_LINE = "Enter: print the session id"
DOWN, UP, ESC = "\x1b[B", "\x1b[A", "\x1b"


@pytest.fixture
def sessions(agent_dir, index):
    """Two sessions, "Deploy the API" the newer, synced."""
    folder = sessions_dir(agent_dir)
    write_session(
        folder / "login.jsonl",
        [
            header("sess-login", title="Fix the flaky login test", cwd="/work/webapp"),
            message_at(1, "u1", None, "user", "the login test is flaky on CI"),
            message_at(2, "a1", "u1", "assistant", "wait for the session cookie before the check"),
        ],
    )
    write_session(
        folder / "deploy.jsonl",
        [
            header("sess-deploy", title="Deploy the API", cwd="/work/api"),
            message_at(30, "u1", None, "user", "deploy the api to staging"),
            message_at(31, "a1", "u1", "assistant", "the deploy script needs the staging key"),
        ],
    )
    index.sync()


@pytest.fixture
def pick(tmp_path):
    """Starts ``xcsh-store pick ARGS`` in a terminal; ends what is left of it after the test."""
    started: list[PickTerminal] = []

    def start(*args: str, rows=24, columns=80, global_options=(), **environment: str):
        stdout = tmp_path / f"stdout-{len(started)}"
        terminal = PickTerminal(args, stdout, rows, columns, environment, global_options)
        started.append(terminal)
        return terminal

    yield start
    for terminal in started:
        terminal.close()


def _list_rows(screen: str) -> list[str]:
    """The lines of the list: after the two lines at the top, each starting with its marker."""
    return [line for line in screen.splitlines()[2:] if line.startswith(("> ", "  Mar"))]


DEPLOY, LOGIN = "deploy the api to staging", "the login test is flaky on CI"


def rows_are(*expected: tuple[bool, str]):
    """Whether the list shows exactly these rows: (selected, what the end of it says) each.
    The screen can be caught halfway through a frame: a predicate is waited for, whole."""

    def shows(screen: str) -> bool:
        rows = _list_rows(screen)
        return len(rows) == len(expected) and all(
            row.startswith("> " if selected else "  ") and row.endswith(text)
            for row, (selected, text) in zip(rows, expected, strict=True)
        )

    return shows


def test_typing_narrows_the_hits(sessions, pick):
    terminal = pick()
    terminal.wait_until(rows_are((True, DEPLOY), (False, LOGIN)), "both sessions")
    terminal.send("flaky")
    terminal.wait_until(rows_are((True, "Fix the flaky login test")), "the flaky one")
    terminal.send(ESC)
    assert terminal.finish() == (1, "")


def test_enter_prints_the_session_id_and_nothing_else(sessions, pick):
    terminal = pick("flaky")
    terminal.wait_for("1 session\n")
    terminal.send("\r")
    assert terminal.finish() == (0, "sess-login\n")


def test_ctrl_o_prints_the_command_that_resumes_the_session(sessions, pick):
    terminal = pick("flaky")
    terminal.wait_for("1 session\n")
    terminal.send("\x0f")
    assert terminal.finish() == (0, "cd /work/webapp && xcsh --resume sess-login\n")


def test_ctrl_x_writes_the_session_as_markdown_here(sessions, pick, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    terminal = pick("flaky")
    terminal.wait_for("1 session\n")
    terminal.send("\x18")
    written = tmp_path / "xcsh-sesslog.md"
    assert terminal.finish() == (0, f"{written}\n")
    document = written.read_text()
    assert document.startswith("# Fix the flaky login test\n")
    assert "the login test is flaky on CI" in document
    assert "wait for the session cookie before the check" in document


def test_the_arrows_move_the_selection(sessions, pick):
    terminal = pick()
    terminal.wait_until(rows_are((True, DEPLOY), (False, LOGIN)), "the first row")
    terminal.send(DOWN)
    terminal.wait_until(rows_are((False, DEPLOY), (True, LOGIN)), "the second row")
    terminal.send(DOWN)  # at the last row it stays there
    terminal.send(UP)
    terminal.wait_until(rows_are((True, DEPLOY), (False, LOGIN)), "the first row again")
    terminal.send(DOWN + "\r")
    assert terminal.finish() == (0, "sess-login\n")


@pytest.mark.parametrize(
    ("down", "up"), [("\x0e", "\x10"), ("\x1b[6~", "\x1b[5~")], ids=["ctrl-n-p", "page-down-up"]
)
def test_ctrl_n_and_ctrl_p_and_the_page_keys_move_too(sessions, pick, down, up):
    terminal = pick()
    terminal.wait_until(rows_are((True, DEPLOY), (False, LOGIN)), "the first row")
    terminal.send(down)
    terminal.wait_until(rows_are((False, DEPLOY), (True, LOGIN)), "the second row")
    terminal.send(up)
    terminal.wait_until(rows_are((True, DEPLOY), (False, LOGIN)), "the first row again")
    terminal.send("\r")
    assert terminal.finish() == (0, "sess-deploy\n")


def test_the_preview_shows_the_hit_among_its_entries(sessions, pick):
    terminal = pick("cookie")
    terminal.wait_until(
        lambda screen: (
            "\n Fix the flaky login test · /work/webapp · " in screen
            and f"\n  user         {LOGIN}\n▶ assistant    wait for the session cookie" in screen
        ),
        "the hit under the entry before it, under the session's bar",
    )
    terminal.send(ESC)
    assert terminal.finish() == (1, "")


@pytest.mark.parametrize("key", [ESC, "\x03", "\x07"], ids=["esc", "ctrl-c", "ctrl-g"])
def test_cancelling_prints_nothing_and_exits_1(sessions, pick, key):
    terminal = pick()
    terminal.wait_for("2 sessions")
    terminal.send(key)
    assert terminal.finish() == (1, "")


def test_prompts_mode_prints_the_prompt(sessions, pick):
    terminal = pick("--prompts", "staging")
    terminal.wait_for("1 prompt\n")
    terminal.send("\r")
    assert terminal.finish() == (0, "deploy the api to staging\n")


@pytest.mark.parametrize("key", ["\t", "\x12", "\x1b[Z"], ids=["tab", "ctrl-r", "shift-tab"])
def test_tab_switches_between_sessions_and_prompts(sessions, pick, key):
    terminal = pick("flaky")
    terminal.wait_for("1 session\n")
    terminal.send(key)
    terminal.wait_until(
        lambda _: (
            terminal.lines()[:2] == ["prompts> flaky", "1 prompt"]
            and terminal.lines()[23].startswith("Enter: print the prompt")
        ),
        "the prompts",
    )
    terminal.send("\r")
    assert terminal.finish() == (0, "the login test is flaky on CI\n")


def test_a_prompt_of_several_lines_is_printed_exactly_when_captured(agent_dir, index, pick):
    prompt = "first line\n\tsecond line \x1b[31mred"
    write_session(
        sessions_dir(agent_dir) / "multi.jsonl",
        [header("sess-multi"), message_at(1, "u1", None, "user", prompt)],
    )
    index.sync()
    terminal = pick("--prompts", "second")
    terminal.wait_for("1 prompt\n")
    terminal.send("\r")
    assert terminal.finish() == (0, prompt + "\n")


def test_a_choice_printed_on_the_terminal_is_sanitised(agent_dir, index):
    write_session(
        sessions_dir(agent_dir) / "red.jsonl",
        [header("sess-red"), message_at(1, "u1", None, "user", "make it \x1b[31mred\x07")],
    )
    index.sync()
    terminal = Terminal([XCSH_STORE, "pick", "--prompts", "make"])  # stdout: the terminal
    try:
        terminal.wait_for("1 prompt\n")
        terminal.send("\r")
        assert terminal.wait_for_end() == 0
        assert "make it \\x1b[31mred\\x07" in terminal.text()
        assert b"make it \x1b[31m" not in terminal.raw
    finally:
        terminal.close()


def test_the_layout_fits_80_by_24(sessions, pick):
    terminal = pick("staging")

    def laid_out(_: str) -> bool:
        lines = terminal.lines()
        return (
            len(lines) == 24
            and lines[:2] == ["sessions> staging", "1 session"]
            and lines[2].startswith("> Mar 01 10:30  Deploy the API")
            and any(line.startswith(" Deploy the API · /work/api · ") for line in lines)
            and any(line.startswith("▶ user ") for line in lines)
            and lines[23].startswith(KEYS_LINE)
        )

    terminal.wait_until(laid_out, "the input, the status, the list, the preview and the keys")
    terminal.send(ESC)
    terminal.finish()


def test_a_resize_redraws_the_layout(sessions, pick):
    terminal = pick()
    terminal.wait_until(lambda _: terminal.lines()[23].startswith(KEYS_LINE), "24 rows")
    terminal.resize(30, 100)
    terminal.wait_until(lambda _: terminal.lines()[29].startswith(KEYS_LINE), "30 rows")
    terminal.resize(12, 50)
    terminal.wait_until(lambda _: terminal.lines()[11].startswith("Enter: "), "12 rows")
    terminal.send("flaky")
    # Narrower than 60 columns, a row has no room for the title: when, then the hit.
    terminal.wait_until(
        lambda screen: any(
            re.fullmatch(r"> .{12}  Fix the flaky login test", row) for row in _list_rows(screen)
        ),
        "the hit without the title",
    )
    terminal.send("\r")
    assert terminal.finish() == (0, "sess-login\n")


@pytest.mark.parametrize(
    ("global_options", "environment", "coloured"),
    [
        ((), {"NO_COLOR": "1"}, False),
        (("--color", "never"), {}, False),
        ((), {}, True),  # the check can fail: a picker that colours is caught
        (("--color", "always"), {"NO_COLOR": "1"}, True),
    ],
    ids=["no-color", "color-never", "auto", "color-always-over-no-color"],
)
def test_no_color_means_no_colour_at_all(sessions, pick, global_options, environment, coloured):
    terminal = pick(global_options=global_options, **environment)
    terminal.wait_until(rows_are((True, DEPLOY), (False, LOGIN)), "both sessions")
    terminal.send("deploy")
    terminal.wait_for("1 session\n")
    terminal.send(DOWN + UP + ESC)
    terminal.finish()
    assert b"\x1b[7m" in terminal.raw or b";7m" in terminal.raw  # the selection, reversed
    assert (colour_sequences(bytes(terminal.raw)) != []) is coloured


HOSTILE_TITLE = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\u202eevil"
WIDE = "漢字テスト" * 40


@pytest.fixture
def hostile(agent_dir, index):
    write_session(
        sessions_dir(agent_dir) / "hostile.jsonl",
        [
            header("sess-hostile", title=HOSTILE_TITLE, cwd="/work/\x1b[2Jx"),
            message_at(
                1, "u1", None, "user", "payload " + "\x1b]8;;https://evil.example/\x1b\\x" * 3
            ),
            message_at(2, "a1", "u1", "assistant", "payload long " + "word " * 2000),
            message_at(3, "u2", "a1", "user", "payload wide " + WIDE),
            message_at(4, "a2", "u2", "assistant", "payload\r\x08\x08forged\nline\ttab"),
        ],
    )
    index.sync()


def test_hostile_session_text_is_shown_inert_within_the_layout(hostile, pick):
    terminal = pick("payload")
    terminal.wait_until(
        _laid_out_with(terminal, "\\x1b]0;owned\\x07", "https://evil.example/\\x1b", "word word"),
        "the escapes as text, the long line cut",
    )
    terminal.send("\x7f" * len("payload") + "forged")
    terminal.wait_until(
        # The hit's lines are its own: \r and backspaces shown, the tab as spaces.
        _laid_out_with(terminal, "▶ assistant    payload\\r\\x08\\x08forged\n", " line    tab\n"),
        "the forged line inert",
    )
    terminal.send("\x7f" * len("forged") + "wide")
    terminal.wait_until(_laid_out_with(terminal, "▶ user         payload wide 漢字"), "wide")
    terminal.send(ESC)
    assert terminal.finish() == (1, "")
    assert terminal.screen.title == ""  # no OSC reached the terminal
    for sequence in (b"\x1b]0;owned", b"\x1b]8;;", b"\x1b[2J\x1b[31m", "\u202e".encode()):
        assert sequence not in terminal.raw


def _laid_out_with(terminal: PickTerminal, *texts: str):
    """Whether the screen shows ``texts`` with the input on the first line, the keys on the
    last and the preview's bar (the hostile title, escaped) between them."""

    def shows(screen: str) -> bool:
        lines = terminal.lines()
        return (
            all(text in screen for text in texts)
            and lines[0].startswith("sessions> ")
            and lines[23].startswith(KEYS_LINE)
            and any(line.startswith(" \\x1b]0;owned\\x07") for line in lines[2:23])
        )

    return shows


def test_what_the_library_logs_goes_to_the_status_line_not_the_screen(agent_dir, index, pick):
    missing = "blob:sha256:" + "0" * 64
    record = message_at(1, "u1", None, "user", "the screenshot shows it")
    record["message"]["content"].append({"type": "image", "data": missing, "mimeType": "image/png"})
    write_session(sessions_dir(agent_dir) / "image.jsonl", [header("sess-image"), record])
    index.sync()
    terminal = pick("screenshot")
    terminal.wait_until(
        lambda _: (
            terminal.lines()[0] == "sessions> screenshot"
            and terminal.lines()[1].startswith("1 session · Blob not found for image reference")
            and any(line.startswith("▶ user ") for line in terminal.lines())
            and terminal.lines()[23].startswith(KEYS_LINE)
        ),
        "the warning on the status line, the layout whole",
    )
    terminal.send(ESC)
    assert terminal.finish() == (1, "")


def test_without_a_terminal_it_says_so(sessions):
    result = subprocess.run(
        [str(Path(sys.executable).with_name("xcsh-store")), "pick"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,  # no controlling terminal: /dev/tty cannot be opened
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: pick needs a terminal to draw on, and /dev/tty")
    assert result.stderr.count("\n") == 1


def test_the_team_index_is_refused(sessions):
    result = CliRunner().invoke(cli, ["--db", "postgresql://127.0.0.1/team", "pick"])
    assert result.exit_code == 2
    assert (
        "--db is for ls, search, show, usage, history, quota, budget and sql;"
        " pick works on index.db" in (result.output)
    )
