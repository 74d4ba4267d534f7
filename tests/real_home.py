"""The real fixture sessions laid out as a user's home keeps them: Claude Code's under
``.claude/projects/<cwd with every other character a dash>/<session id>.jsonl`` (the subagent
under ``<session>/subagents/``), Codex's under ``.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>
.jsonl``, pi's under ``.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`` and oh-my-pi's under
``.omp/agent/sessions/``. Every file keeps its bytes; its modification time is the copy's (as
after restoring a backup), not its last entry's.

The one shared fixture of the tests that check what a user sees on such a machine (conftest's
``real_home``): paths below are derived from each file's own lines, as each agent derives them.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from xcsh_store.paths import session_file_name

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# The synthetic subagent pair has no cwd in its lines: a project folder for it.
SNATCH_PROJECT = "/home/user/snatch"
SNATCH_PARENT = "jkindrix__claude-snatch__c0ffee00-1111-2222-3333-444455556666.jsonl"
SNATCH_SUBAGENT = "jkindrix__claude-snatch__agent-1111111111111111.jsonl"


@dataclass
class RealHome:
    """Where each fixture went, by its name under ``fixtures/<agent>/``."""

    home: Path
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def claude_dir(self) -> Path:
        return self.home / ".claude"

    @property
    def codex_dir(self) -> Path:
        return self.home / ".codex"

    @property
    def pi_dir(self) -> Path:
        return self.home / ".pi" / "agent"

    @property
    def omp_dir(self) -> Path:
        return self.home / ".omp" / "agent"

    def of(self, agent: str) -> dict[str, Path]:
        """The files of one fixture folder (``claude``, ``codex``, ``pi``)."""
        names = {path.name for path in (FIXTURES / agent).glob("*.jsonl")}
        return {name: path for name, path in self.files.items() if name in names}


def lay_out_home(home: Path) -> RealHome:
    """Copy every Claude Code, Codex and pi-family fixture to where its agent keeps it."""
    laid_out = RealHome(home)
    for source in sorted((FIXTURES / "claude").glob("*.jsonl")):
        laid_out.files[source.name] = _copy(source, laid_out.claude_dir / _claude_path(source))
    for source in sorted((FIXTURES / "codex").glob("*.jsonl")):
        laid_out.files[source.name] = _copy(source, laid_out.codex_dir / _codex_path(source))
    for source in sorted((FIXTURES / "pi").glob("*.jsonl")):
        agent_dir = laid_out.omp_dir if _is_omp(source.name) else laid_out.pi_dir
        laid_out.files[source.name] = _copy(source, agent_dir / _pi_path(source))
    return laid_out


def claude_project_folder(cwd: str) -> str:
    """Claude Code's folder name of a cwd: every character but ASCII letters and digits is a
    dash (``/home/a/x.y`` -> ``-home-a-x-y``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _copy(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def _objects(source: Path) -> list[dict[str, Any]]:
    found = []
    for line in source.read_bytes().splitlines():
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def _first(objects: list[dict[str, Any]], key: str) -> Any:
    return next((value[key] for value in objects if isinstance(value.get(key), str)), None)


def _claude_path(source: Path) -> Path:
    if source.name == SNATCH_SUBAGENT:
        parent = _claude_path(FIXTURES / "claude" / SNATCH_PARENT).with_suffix("")
        return parent / "subagents" / "agent-1111111111111111.jsonl"
    objects = _objects(source)
    cwd = _first(objects, "cwd") or SNATCH_PROJECT
    return Path("projects") / claude_project_folder(cwd) / f"{_first(objects, 'sessionId')}.jsonl"


def _codex_path(source: Path) -> Path:
    first = _objects(source)[0]
    meta = first.get("payload", first)
    stamp = meta["timestamp"][:19]  # 2025-11-17T21:30:28
    day = stamp[:10].split("-")
    name = f"rollout-{stamp.replace(':', '-')}-{meta['id']}.jsonl"
    return Path("sessions", *day, name)


def _pi_path(source: Path) -> Path:
    header = next(value for value in _objects(source) if value.get("type") == "session")
    name = session_file_name(header["timestamp"], header["id"])
    return Path("sessions", pi_project_folder(header["cwd"]), name)


def pi_project_folder(cwd: str) -> str:
    """pi's folder name of a cwd as pi computes it on the machine that wrote it (a Windows
    cwd stays a Windows cwd): ``--<cwd without its leading slash, / \\ : as dashes>--``."""
    return "--" + re.sub(r"[/\\:]", "-", cwd.removeprefix("/").removeprefix("\\")) + "--"


def _is_omp(name: str) -> bool:
    return re.search(r"__omp-|oh-my-pi", name) is not None
