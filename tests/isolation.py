"""The environment every test runs in, so that no test reads or writes the machine's own sessions:
$HOME, the XDG base folders and every variable that moves a folder where an agent keeps sessions
point into a temp dir, and the variables that name a folder below $HOME, a profile or a team
database are removed. The one list of them.

conftest.py applies it for the whole run as pytest starts (module-scoped fixtures and collection
too) and again into each test's own tmp_path; subprocesses inherit it, and a test that builds a
subprocess's environment from nothing takes :func:`isolated_environment`.
"""

from __future__ import annotations

import os
from pathlib import Path

from xcsh_store.agents import folder_variables
from xcsh_store.homes import FOLDER_VARIABLES, NAME_VARIABLES, XDG_DATA_HOME_ENV

XDG_VARIABLES = (XDG_DATA_HOME_ENV, "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")
# Agents the store may read next, by the variable each honours for its folder (Gemini CLI,
# Amp, opencode, GitHub Copilot CLI, Qwen Code): already in the temp dir when they come.
NEXT_AGENT_VARIABLES = (
    "GEMINI_CLI_HOME",
    "AMP_DATA_DIR",
    "OPENCODE_DATA_DIR",
    "COPILOT_HOME",
    "QWEN_HOME",
)
# Where each variable points, below the temp home (the agent's own default place there).
_FOLDERS = {
    "XCSH_AGENT_DIR": ".xcsh/agent",
    "CLAUDE_CONFIG_DIR": ".claude",
    "CODEX_HOME": ".codex",
    "PI_CODING_AGENT_DIR": ".pi/agent",
    "OMP_CODING_AGENT_DIR": ".omp/agent",
    XDG_DATA_HOME_ENV: ".local/share",
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
    "XDG_STATE_HOME": ".local/state",
    "GEMINI_CLI_HOME": ".",
    "AMP_DATA_DIR": ".local/share/amp",
    "OPENCODE_DATA_DIR": ".local/share/opencode",
    "COPILOT_HOME": ".copilot",
    "QWEN_HOME": ".qwen",
}
# The agent plugins' own variables (a plugin's module names them): a folder named after the
# variable where _FOLDERS says none.
ISOLATED_FOLDERS = tuple(
    dict.fromkeys(
        ("HOME", *FOLDER_VARIABLES, *folder_variables(), *XDG_VARIABLES, *NEXT_AGENT_VARIABLES)
    )
)
# A profile of oh-my-pi, the team index the read verbs would read (--db), the terminal
# variables that would give tests different terminal ids, and the terminal's size (Python's
# readline module, once some test imports it, puts COLUMNS and LINES into the environment: a
# test that ran after it in the same process would see its tables cut to that width).
REMOVED = (
    *NAME_VARIABLES,
    "OMP_PROFILE",
    "PI_PROFILE",
    "XCSH_STORE_DB",
    "KITTY_WINDOW_ID",
    "TMUX_PANE",
    "TERM_SESSION_ID",
    "WT_SESSION",
    "COLUMNS",
    "LINES",
)


def isolated_environment(home: Path) -> dict[str, str]:
    """Every isolated variable -> its folder below ``home`` (HOME itself included)."""
    found = {"HOME": str(home)}
    for variable in ISOLATED_FOLDERS[1:]:
        found[variable] = str(home / _FOLDERS.get(variable, "." + variable.lower()))
    return found


def isolate(home: Path, environ: os._Environ[str] | dict[str, str]) -> None:
    """Point ``environ`` (os.environ, at pytest's start) into ``home``."""
    environ.update(isolated_environment(home))
    for variable in REMOVED:
        environ.pop(variable, None)
