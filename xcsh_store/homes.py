"""Where the agents of the xcsh family keep their sessions on this machine, found as the agent
itself finds them (its default folder and the environment variables it honours to move it),
where the store keeps its index when there is no xcsh agent dir, and the helpers the agent
plugins find their own folders with (each plugin module owns its folders: agents/claude.py...).

A sync indexes every one of these folders that exists, read-only (issues 18 and 25). The
variables, from each agent's own source:

* pi (badlogic/pi-mono, ``packages/coding-agent/src/config.ts`` ``getAgentDir``):
  ``$PI_CODING_AGENT_DIR`` (a leading ``~`` expanded), else ``~/.pi/agent``; sessions in
  ``sessions/``.
* oh-my-pi (can1357/oh-my-pi, ``packages/utils/src/dirs.ts``): ``~/.omp/agent``, where
  ``.omp`` is ``$PI_CONFIG_DIR`` when set; a named profile's ``~/.omp/profiles/<name>/agent``;
  on Linux and macOS, ``$XDG_DATA_HOME/omp`` once ``omp config migrate`` moved its data there
  (sessions then in ``$XDG_DATA_HOME/omp/sessions``); before 2026,
  ``$OMP_CODING_AGENT_DIR``. Current oh-my-pi also honours ``$PI_CODING_AGENT_DIR``: a folder
  both may write to is pi's, and a file in it that begins with oh-my-pi's ``title`` record is
  oh-my-pi's (agents/__init__.py ``xcsh_agent_of``).

The index of someone who uses none of xcsh lives in the data dir of the XDG Base Directory
rules, ``$XDG_DATA_HOME/xcsh-store`` (``~/.local/share/xcsh-store``), never in another agent's
folder. The rules are a few lines, so no library: platformdirs would put it in
``~/Library/Application Support`` on macOS, where the agents read here (Claude Code, Codex, pi,
oh-my-pi and the other plugins') keep dot-folders in $HOME or follow $XDG_DATA_HOME (oh-my-pi,
Amp, opencode) too.
"""

from __future__ import annotations

import glob
import os

from xcsh_store.paths import AGENT_DIR_ENV, SESSIONS_DIRNAME, get_agent_dir, is_agent_dir

PI_AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
OMP_AGENT_DIR_ENV = "OMP_CODING_AGENT_DIR"
# oh-my-pi's config folder, a name below $HOME (".omp" by default), not a path.
OMP_CONFIG_DIR_ENV = "PI_CONFIG_DIR"
XDG_DATA_HOME_ENV = "XDG_DATA_HOME"
XDG_CONFIG_HOME_ENV = "XDG_CONFIG_HOME"
XDG_CACHE_HOME_ENV = "XDG_CACHE_HOME"
STORE_DIRNAME = "xcsh-store"
# The user's own prices (negotiated rates, private models): agents/prices/price_file.py reads it.
PRICES_FILE_NAME = "prices.toml"
# The store's settings (index/archive/settings.py reads its [agents.NAME] archive switches).
CONFIG_FILE_NAME = "config.toml"

# Every variable that names a folder the store reads or writes, and every one that names a
# folder below $HOME (tests/isolation.py points the first into each test's temp dir and removes
# the second). The plugins' own: agents.folder_variables().
FOLDER_VARIABLES = (
    AGENT_DIR_ENV,
    PI_AGENT_DIR_ENV,
    OMP_AGENT_DIR_ENV,
    XDG_DATA_HOME_ENV,
    XDG_CACHE_HOME_ENV,
)
NAME_VARIABLES = (OMP_CONFIG_DIR_ENV,)


def home() -> str:
    return os.path.expanduser("~")


def folder_of(variable: str) -> str | None:
    """The folder an environment variable names (``~`` expanded, made absolute), if set."""
    value = os.environ.get(variable)
    return os.path.abspath(os.path.expanduser(value)) if value else None


def agent_home(variable: str, *default: str) -> str:
    """An agent's folder: the one ``variable`` names, else ``default`` below $HOME."""
    return folder_of(variable) or os.path.join(home(), *default)


def get_pi_dir() -> str:
    """pi's agent dir: ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``."""
    return folder_of(PI_AGENT_DIR_ENV) or os.path.join(home(), ".pi", "agent")


def _omp_config_root() -> str:
    return os.path.join(home(), os.environ.get(OMP_CONFIG_DIR_ENV) or ".omp")


def _omp_xdg_dir() -> str | None:
    """oh-my-pi's data folder under $XDG_DATA_HOME, which it uses only when the variable is set."""
    data = folder_of(XDG_DATA_HOME_ENV)
    return os.path.join(data, "omp") if data else None


def get_omp_dir() -> str:
    """oh-my-pi's agent dir: ``$OMP_CODING_AGENT_DIR`` or ``~/.omp/agent``."""
    return folder_of(OMP_AGENT_DIR_ENV) or os.path.join(_omp_config_root(), "agent")


def agent_folders() -> list[tuple[str, str]]:
    """(folder, agent) of every folder below which files are that agent's by their place: the
    agent dirs of pi and oh-my-pi, oh-my-pi's config root (its profiles) and its XDG folder."""
    folders = [(get_pi_dir(), "pi"), (get_omp_dir(), "omp"), (_omp_config_root(), "omp")]
    xdg = _omp_xdg_dir()
    if xdg is not None:
        folders.append((xdg, "omp"))
    return folders


def xcsh_family_roots() -> dict[str, str]:
    """Every folder where pi or oh-my-pi may keep session files on this machine -> the agent
    (the folders need not exist; the plugins' own: agents.agent_session_roots)."""
    roots = {
        os.path.join(get_pi_dir(), SESSIONS_DIRNAME): "pi",
        os.path.join(get_omp_dir(), SESSIONS_DIRNAME): "omp",
    }
    profiles = os.path.join(glob.escape(_omp_config_root()), "profiles", "*", "agent")
    for profile in sorted(glob.glob(profiles)):
        roots.setdefault(os.path.join(profile, SESSIONS_DIRNAME), "omp")
    xdg = _omp_xdg_dir()
    if xdg is not None:
        roots.setdefault(os.path.join(xdg, SESSIONS_DIRNAME), "omp")
    return roots


def _xdg_home(variable: str, *default: str) -> str:
    """An XDG base folder: the variable when it is an absolute path (the XDG rules ignore a
    relative one), else its default below $HOME."""
    value = os.environ.get(variable)
    if value and os.path.isabs(value):
        return value
    return os.path.join(home(), *default)


def data_home() -> str:
    """``$XDG_DATA_HOME``, else ``~/.local/share``."""
    return _xdg_home(XDG_DATA_HOME_ENV, ".local", "share")


def get_prices_file() -> str:
    """``$XDG_CONFIG_HOME/xcsh-store/prices.toml`` (``~/.config/xcsh-store/prices.toml``)."""
    return os.path.join(_xdg_home(XDG_CONFIG_HOME_ENV, ".config"), STORE_DIRNAME, PRICES_FILE_NAME)


def get_cache_dir() -> str:
    """What the store keeps for the user to save work, any of it safe to delete (the price
    table, the plugins' entry points: user_cache.py): ``$XDG_CACHE_HOME/xcsh-store``
    (``~/.cache/xcsh-store``)."""
    return os.path.join(_xdg_home(XDG_CACHE_HOME_ENV, ".cache"), STORE_DIRNAME)


def get_config_file() -> str:
    """The store's settings: ``$XDG_CONFIG_HOME/xcsh-store/config.toml``
    (``~/.config/xcsh-store/config.toml``)."""
    return os.path.join(_xdg_home(XDG_CONFIG_HOME_ENV, ".config"), STORE_DIRNAME, CONFIG_FILE_NAME)


def get_data_store_dir() -> str:
    """Where the index lives for someone who uses no xcsh: ``$XDG_DATA_HOME/xcsh-store``."""
    return os.path.join(data_home(), STORE_DIRNAME)


def get_store_dir() -> str:
    """The folder of the index the CLI opens by default: ``$XCSH_AGENT_DIR`` when set, else
    ``~/.xcsh/agent`` once xcsh has been used here, else :func:`get_data_store_dir`."""
    agent_dir = get_agent_dir()
    if os.environ.get(AGENT_DIR_ENV) or is_agent_dir(agent_dir):
        return agent_dir
    return get_data_store_dir()
