"""The limits a user sets: plan limits for agents whose files hold no readings of their own
(Claude Code's, in tokens per window) and spend budgets, read from the store's config file
(``$XDG_CONFIG_HOME/xcsh-store/config.toml``)::

    [quota.claude]
    five_hour_tokens = 220_000_000   # or "max": the largest earlier window (the default)
    weekly_tokens = "max"

    [budget]
    warn_percent = 80                # warn from this share of a budget (default 80)
    daily = 20.0                     # US dollars of list price
    monthly = 300

    [budget.agent.codex]
    weekly = 40

    [budget.project."/home/me/src/app"]
    daily = 5

and the budgets ``xcsh-store budget set`` writes to ``budgets.toml`` beside it (the same
``[budget]`` tables; one set there wins over the config file's).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

from xcsh_store.errors import XcshStoreError
from xcsh_store.files import open_regular_file
from xcsh_store.homes import get_config_file
from xcsh_store.paths import write_private_file

PERIODS = ("daily", "weekly", "monthly")
WINDOW_KEYS = ("five_hour_tokens", "weekly_tokens")
DEFAULT_WARN_PERCENT = 80.0
BUDGETS_FILE_NAME = "budgets.toml"


class LimitsConfigError(XcshStoreError):
    """The config file or budgets.toml cannot be read, or says something it cannot mean."""


@dataclass(frozen=True, slots=True)
class Budget:
    """A spend limit: ``amount`` dollars per ``period``, over everything (scope ``all``) or one
    agent's or project's sessions (scope ``agent`` / ``project``, ``name`` which)."""

    period: str
    amount: float
    scope: str = "all"
    name: str | None = None

    @property
    def label(self) -> str:
        where = "overall" if self.scope == "all" else f"{self.scope} {self.name}"
        return f"{self.period} {where}"


@dataclass(frozen=True, slots=True)
class Limits:
    """Everything the config and budgets files say of limits."""

    # agent -> {"five_hour_tokens": count or None (calibrate: "max")}
    windows: dict[str, dict[str, int | None]] = field(default_factory=dict)
    budgets: tuple[Budget, ...] = ()
    warn_percent: float = DEFAULT_WARN_PERCENT

    def window_limit(self, agent: str, key: str) -> int | None:
        """The configured limit of a window, None to calibrate from history."""
        return self.windows.get(agent, {}).get(key)


def budgets_file(config_file: str | None = None) -> str:
    return os.path.join(os.path.dirname(config_file or get_config_file()), BUDGETS_FILE_NAME)


def _read_toml(path: str) -> dict[str, Any]:
    if not os.path.exists(path):
        return {}  # (tomllib, imported below, costs the status line more than this stat)
    import tomllib

    try:
        with open_regular_file(path) as stream:
            return tomllib.loads(stream.read().decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise LimitsConfigError(f"Cannot read {path}: {error}") from None


def read_limits(config_file: str | None = None) -> Limits:
    """The limits of the config file and budgets.toml (none without either)."""
    config_file = config_file or get_config_file()
    config = _read_toml(config_file)
    windows = _windows(config_file, config.get("quota", {}))
    budgets = {(b.period, b.scope, b.name): b for b in _budgets(config_file, config)}
    kept_path = budgets_file(config_file)
    kept = _read_toml(kept_path)
    budgets.update({(b.period, b.scope, b.name): b for b in _budgets(kept_path, kept)})
    warn = kept.get("budget", {}).get("warn_percent", config.get("budget", {}).get("warn_percent"))
    if warn is None:
        warn = DEFAULT_WARN_PERCENT
    if not _amount(warn) or warn > 100:
        raise LimitsConfigError(f"{config_file}: budget.warn_percent must be a number 1-100")
    return Limits(windows, tuple(budgets.values()), float(warn))


def _amount(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value > 0


def _windows(path: str, table: Any) -> dict[str, dict[str, int | None]]:
    if not isinstance(table, dict):
        raise LimitsConfigError(f"{path}: [quota] must be a table of [quota.AGENT] tables")
    windows: dict[str, dict[str, int | None]] = {}
    for agent, settings in table.items():
        if not isinstance(settings, dict):
            raise LimitsConfigError(f"{path}: quota.{agent} must be a table")
        found: dict[str, int | None] = {}
        for key, value in settings.items():
            if key not in WINDOW_KEYS:
                raise LimitsConfigError(
                    f"{path}: quota.{agent}.{key} is not one of {', '.join(WINDOW_KEYS)}"
                )
            if value == "max":
                found[key] = None
            elif type(value) is int and value > 0:
                found[key] = value
            else:
                raise LimitsConfigError(
                    f'{path}: quota.{agent}.{key} must be a token count or "max"'
                )
        windows[agent] = found
    return windows


def _budgets(path: str, config: dict[str, Any]) -> list[Budget]:
    table = config.get("budget", {})
    if not isinstance(table, dict):
        raise LimitsConfigError(f"{path}: [budget] must be a table")
    found = _period_budgets(path, "budget", table, "all", None)
    for scope in ("agent", "project"):
        named = table.get(scope, {})
        if not isinstance(named, dict):
            raise LimitsConfigError(f"{path}: budget.{scope} must be a table of tables")
        for name, limits in named.items():
            if not isinstance(limits, dict):
                raise LimitsConfigError(f"{path}: budget.{scope}.{name} must be a table")
            found += _period_budgets(path, f"budget.{scope}.{name}", limits, scope, name)
    return found


def _period_budgets(
    path: str, where: str, table: dict[str, Any], scope: str, name: str | None
) -> list[Budget]:
    found = []
    for key, value in table.items():
        if key in ("agent", "project", "warn_percent") and scope == "all":
            continue
        if key not in PERIODS:
            raise LimitsConfigError(f"{path}: {where}.{key} is not one of {', '.join(PERIODS)}")
        if not _amount(value):
            raise LimitsConfigError(f"{path}: {where}.{key} must be a positive amount")
        found.append(Budget(key, float(value), scope, name))
    return found


def set_budget(
    budget: Budget | None,
    *,
    remove: Budget | None = None,
    warn_percent: float | None = None,
    config_file: str | None = None,
) -> str:
    """Keep ``budget`` in budgets.toml (replacing one of the same period and scope), or drop
    ``remove``'s; returns the file's path. The file is the program's: written whole."""
    path = budgets_file(config_file)
    kept = _read_toml(path)
    budgets = {(b.period, b.scope, b.name): b for b in _budgets(path, kept)}
    warn = kept.get("budget", {}).get("warn_percent")
    if warn_percent is not None:
        warn = warn_percent
    if remove is not None:
        budgets.pop((remove.period, remove.scope, remove.name), None)
    if budget is not None:
        budgets[(budget.period, budget.scope, budget.name)] = budget
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_private_file(path, budgets_toml(list(budgets.values()), warn).encode("utf-8"))
    return path


def budgets_toml(budgets: list[Budget], warn_percent: float | None) -> str:
    """The TOML of budgets.toml (names quoted as JSON strings, which TOML reads alike)."""
    import json

    lines = ["# Written by `xcsh-store budget set`; edited by hand, it is read as it is.", ""]
    lines.append("[budget]")
    if warn_percent is not None:
        lines.append(f"warn_percent = {float(warn_percent)!r}")
    lines += [f"{b.period} = {b.amount!r}" for b in budgets if b.scope == "all"]
    for scope in ("agent", "project"):
        names = sorted({b.name for b in budgets if b.scope == scope and b.name is not None})
        for name in names:
            lines += ["", f"[budget.{scope}.{json.dumps(name, ensure_ascii=False)}]"]
            lines += [
                f"{b.period} = {b.amount!r}" for b in budgets if b.scope == scope and b.name == name
            ]
    return "\n".join(lines) + "\n"
