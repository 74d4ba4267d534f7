"""The shells' key bindings of ``xcsh-store pick --shell-binding SHELL``: each is valid code for
its shell, and in a real interactive shell (bash always; zsh and fish where installed) Alt-R
opens the picker on prompts with the command line as the query, puts the chosen prompt on the
command line with the cursor after it, and leaves the line as it was when cancelled."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pick_terminal import XCSH_STORE, Terminal
from session_builder import header, message, sessions_dir, write_session

from xcsh_store.cli.picker.shells import SHELLS

# A prompt that is a command in every one of these shells, whose output ("picked-42-漢字") is
# not on its command line; the wide characters make a cursor counted in characters, where
# bytes are wanted, land inside it.
PROMPT = "printf 'pic%s\\n' ked-42-漢字"
SHELL_RUNS = {
    "bash": ["bash", "--norc", "--noprofile", "-i"],
    "zsh": ["zsh", "-f", "-i"],
    "fish": ["fish", "--no-config", "-i"],
}
LOAD = {
    "bash": 'eval "$(xcsh-store pick --shell-binding bash)"',
    "zsh": 'eval "$(xcsh-store pick --shell-binding zsh)"',
    "fish": "xcsh-store pick --shell-binding fish | source",
}
SYNTAX_CHECKS = {"bash": ["bash", "-n"], "zsh": ["zsh", "-n"], "fish": ["fish", "--no-execute"]}


def _installed(shell: str) -> None:
    """bash is everywhere these tests run; zsh and fish are checked where installed, and in CI
    (CI=true: .ci/run installs them) a missing one fails."""
    if shell != "bash" and shutil.which(shell) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{shell} is not installed (.ci/run installs it)")
        pytest.skip(f"{shell} is not installed")


def test_every_shell_has_a_binding():
    assert set(SHELL_RUNS) == set(SHELLS) == set(SYNTAX_CHECKS)


@pytest.mark.parametrize("shell", SHELLS)
def test_the_binding_is_valid_code_for_its_shell(shell, tmp_path):
    _installed(shell)
    printed = subprocess.run(
        [XCSH_STORE, "pick", "--shell-binding", shell],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    script = tmp_path / f"binding.{shell}"
    script.write_text(printed, encoding="utf-8")
    checked = subprocess.run(
        [*SYNTAX_CHECKS[shell], str(script)], capture_output=True, text=True, timeout=120
    )
    assert (checked.returncode, checked.stderr) == (0, "")
    assert "\\er" in printed or "^[r" in printed  # Alt-R


@pytest.fixture
def prompts(agent_dir, index):
    write_session(
        sessions_dir(agent_dir) / "commands.jsonl",
        [header("sess-commands"), message("u1", None, "user", PROMPT)],
    )
    index.sync()


def _shell(shell: str, columns: int = 80) -> Terminal:
    """``shell``, interactive and without its user's start-up files, with the binding loaded
    and ready for the next command line."""
    terminal = Terminal(
        SHELL_RUNS[shell],
        columns=columns,
        environment={
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PS1": "$ ",
            "INPUTRC": "/dev/null",
            "LANG": "C.UTF-8",
        },
    )
    terminal.send(LOAD[shell] + "\r")
    terminal.send("printf 'rea%s\\n' dy\r")
    terminal.wait_until(lambda _: "ready" in terminal.lines(), "the shell ready")
    return terminal


def _shows_the_line(terminal: Terminal, command_line: str) -> bool:
    """Whether the picker has ended (keys typed now are the shell's) and the shell shows its
    command line ending in ``command_line``."""
    return (
        terminal.screen.main is None
        and not terminal.runs_a_command()
        and any(line.endswith(command_line) for line in terminal.lines())
    )


@pytest.mark.parametrize("shell", SHELLS)
def test_alt_r_puts_the_chosen_prompt_on_the_command_line(shell, prompts):
    _installed(shell)
    terminal = _shell(shell)
    try:
        terminal.send("pic\x1br")  # the command line so far is the query
        terminal.wait_for("prompts> pic")
        terminal.wait_for("1 prompt\n")
        terminal.send("\r")
        terminal.wait_until(lambda _: _shows_the_line(terminal, PROMPT), "the prompt taken")
        # Typed where the cursor is: after the prompt, or the command is garbled.
        terminal.send("; printf 'en%s\\n' d\r")
        terminal.wait_until(
            lambda _: {"picked-42-漢字", "end"} <= set(terminal.lines()), "the prompt run"
        )
    finally:
        terminal.close()


def test_cancelling_leaves_the_command_line_as_it_was(prompts):
    terminal = _shell("bash")
    try:
        terminal.send("printf 'ke%s\\n' ep\x1br")
        terminal.wait_for("prompts> printf 'ke%s\\n' ep")
        terminal.wait_for("No prompts found.")
        terminal.send("\x1b")
        terminal.wait_until(lambda _: _shows_the_line(terminal, "printf 'ke%s\\n' ep"), "the line")
        terminal.send("\r")
        terminal.wait_until(lambda _: "keep" in terminal.lines(), "the line run as it was")
    finally:
        terminal.close()


# A prompt of two lines (two commands, in a shell), with an OSC 52 sequence (it sets the
# clipboard when a terminal is sent it) and a right-to-left override (it reorders what the
# line shows).
HOSTILE = "printf 'one%s\\n' line\nprintf 'two%s\\n' lines \x1b]52;c;cHduZWQ\x07\u202e"


@pytest.fixture
def hostile_prompt(agent_dir, index):
    write_session(
        sessions_dir(agent_dir) / "hostile.jsonl",
        [header("sess-hostile"), message("u1", None, "user", HOSTILE)],
    )
    index.sync()


@pytest.mark.parametrize("shell", SHELLS)
def test_a_prompt_goes_on_the_command_line_as_one_line_without_controls(shell, hostile_prompt):
    _installed(shell)
    terminal = _shell(shell, columns=160)  # the line whole, after fish's long prompt
    try:
        start = len(terminal.raw)
        terminal.send("printf\x1br")
        terminal.wait_for("1 prompt\n")
        terminal.send("\r")
        flat = "printf 'one%s\\n' line printf 'two%s\\n' lines ]52;c;cHduZWQ"
        terminal.wait_until(lambda _: _shows_the_line(terminal, flat), "the prompt, one line")
        terminal.send("\r")
        terminal.wait_until(lambda _: "oneline" in terminal.lines(), "the prompt run")
        # One command: the second line's is an argument of the first.
        assert "twolines" not in terminal.lines()
        assert b"\x1b]52" not in terminal.raw[start:] and "\u202e".encode() not in terminal.raw
    finally:
        terminal.close()
