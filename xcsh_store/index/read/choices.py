"""The names the index knows: what shell completion offers (session ids with their titles,
project folders and model names, each a few indexed lookups whatever the size of the index),
and the check that a filter names something it has."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xcsh_store.errors import UnknownFilterError
from xcsh_store.index.read.names import unique_id_prefixes
from xcsh_store.index.read.questions import SessionFilter, SessionQuery

if TYPE_CHECKING:
    from xcsh_store.index.store import SessionIndex

# Shells show a screenful at most; more would only slow the answer down.
MAX_CHOICES = 50
# Past every character SQLite stores: ``text < prefix || LAST`` bounds a prefix range.
_LAST = "\U0010ffff"


@dataclass(frozen=True, slots=True)
class Choice:
    value: str
    help: str | None = None


def session_choices(index: SessionIndex, typed: str, limit: int = MAX_CHOICES) -> list[Choice]:
    """Sessions whose id starts with ``typed`` (case-insensitive), newest first: each as the
    shortest prefix that names it alone (never shorter than ``typed``), its title as help."""
    typed = typed.lower()
    rows = list(
        index.connection.execute(
            "SELECT session_id, coalesce(title, compaction_title, first_message) FROM sessions"
            " WHERE lower(session_id) >= ?1 AND lower(session_id) < ?1 || ?2"
            " ORDER BY modified_at DESC, file_id DESC LIMIT ?3",
            (typed, _LAST, limit),
        )
    )
    prefixes = unique_id_prefixes(index.connection, (session_id for session_id, _title in rows))
    choices: dict[str, Choice] = {}
    for session_id, title in rows:
        value = session_id[: max(len(prefixes[session_id]), len(typed))]
        help_text = " ".join(title.split()) if title else None
        choices.setdefault(value, Choice(value, help_text))
    return list(choices.values())


def project_choices(index: SessionIndex, typed: str, limit: int = MAX_CHOICES) -> list[Choice]:
    """Projects (the sessions' working directories) that start with ``typed``, with their
    session counts."""
    rows = list(
        index.connection.execute(
            "SELECT cwd, count(*) FROM sessions WHERE cwd >= ?1 AND cwd < ?1 || ?2"
            " GROUP BY cwd ORDER BY max(modified_at) DESC LIMIT ?3",
            (typed, _LAST, limit),
        )
    )
    return [
        Choice(project, f"{count} session{'' if count == 1 else 's'}") for project, count in rows
    ]


def model_choices(index: SessionIndex, typed: str, limit: int = MAX_CHOICES) -> list[Choice]:
    """Model ids that start with ``typed`` (through the index on ``entries.model``); once
    ``typed`` has a ``/``, the ``provider/model`` names that ``usage`` prints."""
    if "/" in typed:
        rows = index.connection.execute(
            "SELECT DISTINCT provider || '/' || model AS name FROM entries"
            " WHERE model IS NOT NULL AND provider IS NOT NULL AND name >= ?1 AND name < ?1 || ?2"
            " ORDER BY name LIMIT ?3",
            (typed, _LAST, limit),
        )
    else:
        rows = index.connection.execute(
            "SELECT DISTINCT model FROM entries WHERE model >= ?1 AND model < ?1 || ?2"
            " ORDER BY model LIMIT ?3",
            (typed, _LAST, limit),
        )
    return [Choice(name) for (name,) in rows]


def check_filters(index: Any, *, model: str | None = None, project: str | None = None) -> None:
    """UnknownFilterError when ``model`` is no entry's model or ``project`` holds no session's
    cwd in ``index`` (a SessionIndex or the team index): the reason a search or listing with them
    found nothing, said instead of "no matches". Meant for after an empty answer, so that it
    costs nothing when there are matches."""
    if model is not None and not index.has_model(model):
        raise UnknownFilterError("model", f"no entry in the index has the model {model!r}")
    if project is not None and not index.sessions(
        SessionQuery(filter=SessionFilter(project=project), limit=1)
    ):
        raise UnknownFilterError(
            "project", f"no session in the index was started in {project} or a folder inside it"
        )
