"""The demo's story as data, and what plays it: the sessions are in ``story/sessions.json`` (in
the order they are written: each a name, a folder, a model, a start and its steps), the long
outputs they show in plain files beside it, and the files outside any session (a v1 file, an
unreferenced blob) in ``story/leftovers.json``. :func:`play` writes one session's steps
through a :class:`~xcsh_store.demo.script.SessionScript`.

A step is an object whose first key says what it is:

* ``user``: a prompt; ``image`` ([width, height]) adds a generated PNG, ``remember`` says
  xcsh also saved it to history.db.
* ``assistant``: an answer.
* ``tool``: an assistant turn calling the tool with ``arguments``, and the tool's ``result``;
  optional ``text``, ``thinking`` and ``image`` (on the result). ``artifact`` names the file
  whose content the call saved as its full output, shown in the result as ``{artifact}``;
  ``subagent`` names the subagent output the call allocated, shown as ``{agent}``, whose text
  is the file ``report``.
* ``thinking_level``, ``label`` (on the step named by ``on``), ``branch_from`` (the step
  named, with its ``summary``), ``compaction`` (with ``short``, the ``kept`` step and
  ``tokens_before``), ``custom_message`` (its type, with ``content`` and ``display``).

``as`` names a step's entry for the steps after it.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from datetime import datetime, timedelta
from importlib import resources
from typing import Any

from xcsh_store.artifacts.store import AgentOutputManager
from xcsh_store.demo.script import SessionScript, png_bytes
from xcsh_store.paths import FILE_MODE, ensure_private_dir

STORY = resources.files(__package__) / "story"


def story_text(name: str) -> str:
    """A file of the story, exactly as it is (no newline translation)."""
    return STORY.joinpath(name).read_bytes().decode("utf-8")


def story_sessions() -> list[dict[str, Any]]:
    """The story's sessions, in the order they are written."""
    return json.loads(story_text("sessions.json"))


def leftovers() -> dict[str, Any]:
    """The files outside any session: ``legacy_session`` and ``orphan_blob``."""
    return json.loads(story_text("leftovers.json"))


def start_time(start: dict[str, Any], now: datetime) -> datetime:
    """When a session starts: ``days_ago`` at ``at`` (HH:MM), or today ``minutes_ago``."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if "minutes_ago" in start:
        # By 23:00 at the latest, so that today's session also ends today.
        return min(now - timedelta(minutes=start["minutes_ago"]), today + timedelta(hours=23))
    hour, minute = (int(part) for part in start["at"].split(":"))
    return today - timedelta(days=start["days_ago"]) + timedelta(hours=hour, minutes=minute)


def image(step: dict[str, Any], rng: random.Random) -> bytes | None:
    """The step's generated PNG, drawn from ``rng`` before the turn's own draws."""
    if "image" not in step:
        return None
    width, height = step["image"]
    return png_bytes(width, height, rng)


class _Player:
    """Plays the steps of one session; remembers the entries named with ``as``."""

    def __init__(self, script: SessionScript) -> None:
        self.script = script
        self.manager = script.manager
        self.named: dict[str, str] = {}
        self.outputs = AgentOutputManager(script.manager.get_artifacts_dir)
        self.steps: dict[str, Callable[[dict[str, Any]], str]] = {
            "user": self.user,
            "assistant": self.assistant,
            "tool": self.tool,
            "thinking_level": lambda step: script.thinking_level(step["thinking_level"]),
            "label": self.label,
            "branch_from": self.branch,
            "compaction": self.compaction,
            "custom_message": self.custom_message,
        }

    def play(self, step: dict[str, Any]) -> str:
        entry_id = self.steps[next(iter(step))](step)
        if "as" in step:
            self.named[step["as"]] = entry_id
        return entry_id

    def user(self, step: dict[str, Any]) -> str:
        return self.script.user(step["user"], image(step, self.script.rng))

    def assistant(self, step: dict[str, Any]) -> str:
        return self.script.assistant(step["assistant"])[0]

    def tool(self, step: dict[str, Any]) -> str:
        picture = image(step, self.script.rng)
        result = step["result"]
        if "artifact" in step:
            artifact = self.script.artifact(story_text(step["artifact"]), step["tool"])
            result = result.replace("{artifact}", artifact)
        agent = self.outputs.allocate(step["subagent"]) if "subagent" in step else None
        if agent is not None:
            result = result.replace("{agent}", agent)
        entry_id = self.script.act(
            step["tool"],
            step["arguments"],
            result,
            text=step.get("text"),
            thinking=step.get("thinking"),
            image=picture,
        )
        if agent is not None:
            _write_output(self.manager.get_artifacts_dir(), agent, story_text(step["report"]))
        return entry_id

    def label(self, step: dict[str, Any]) -> str:
        return self.script.stamp(
            self.manager.append_label_change(self.named[step["on"]], step["label"])
        )

    def branch(self, step: dict[str, Any]) -> str:
        return self.script.stamp(
            self.manager.branch_with_summary(self.named[step["branch_from"]], step["summary"])
        )

    def compaction(self, step: dict[str, Any]) -> str:
        kept = self.named[step["kept"]]
        return self.script.stamp(
            self.manager.append_compaction(
                step["compaction"], step["short"], kept, step["tokens_before"]
            )
        )

    def custom_message(self, step: dict[str, Any]) -> str:
        return self.script.stamp(
            self.manager.append_custom_message_entry(
                step["custom_message"], step["content"], step["display"]
            )
        )


def play(script: SessionScript, steps: list[dict[str, Any]]) -> list[tuple[str, datetime]]:
    """Write ``steps`` into the script's session; returns the prompts to ``remember`` in
    history.db, with the times they were typed."""
    player = _Player(script)
    remembered = []
    for step in steps:
        entry_id = player.play(step)
        if step.get("remember"):
            remembered.append((step["user"], script.times[entry_id]))
    return remembered


def _write_output(artifacts_dir: str | None, output_id: str, text: str) -> None:
    """What the task tool does with a subagent's answer: ``<artifacts>/<id>.md``."""
    assert artifacts_dir is not None
    ensure_private_dir(artifacts_dir)
    path = os.path.join(artifacts_dir, f"{output_id}.md")
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "w") as handle:
        handle.write(text)
