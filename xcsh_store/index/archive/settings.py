"""Which agents' sessions the archive keeps: every agent's but those the store's config file
turns off (``$XDG_CONFIG_HOME/xcsh-store/config.toml``)::

    [agents.claude]
    archive = false

xcsh's own sessions (the agent dir's ``sessions/`` and the folders its sessions were made in)
are never archived: they are the store's own files, written through the library, and only
their owner deletes one.
"""

from __future__ import annotations

import tomllib

from xcsh_store.errors import XcshStoreError
from xcsh_store.files import open_regular_file
from xcsh_store.homes import get_config_file


class ConfigError(XcshStoreError):
    """The store's config file cannot be read, or says something it cannot mean."""


def agents_not_archived(path: str | None = None) -> set[str]:
    """The agents whose ``archive`` the config file sets to false (none without the file)."""
    path = path or get_config_file()
    try:
        with open_regular_file(path) as stream:
            settings = tomllib.loads(stream.read().decode("utf-8"))
    except FileNotFoundError:
        return set()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"Cannot read the config file {path}: {error}") from None
    agents = settings.get("agents", {})
    if not isinstance(agents, dict):
        raise ConfigError(f"{path}: [agents] must be a table of [agents.NAME] tables")
    off = set()
    for name, table in agents.items():
        archive = table.get("archive", True) if isinstance(table, dict) else None
        if not isinstance(archive, bool):
            raise ConfigError(f"{path}: agents.{name}.archive must be true or false")
        if not archive:
            off.add(name)
    return off
