"""Claude Code's summary lines, which title the session that holds their leaf.

A ``{"type": "summary", "summary", "leafUuid"}`` line summarises the conversation that ends at
the entry ``leafUuid``. Claude Code 1.0.x writes them at the top of the file of a conversation
it resumes, for the conversations it continues: most often the leaf is in another file of the
same project folder, which may be indexed before or after the summary's file, or never. So a
file's summary lines are rows of their own (``leaf_summaries``), derived from that file alone,
and a session's title is resolved from them after each sync, across files:

* A Claude session without a title of its own (``file_title``: no ``ai-title`` or
  ``custom-title`` line) takes the summary whose leaf is its latest entry that has one, among
  the summary lines of the files of its project folder (the folder Claude Code's ``--resume``
  lists, and matches summaries in), with ``title_source`` ``summary``.
* Several summaries of one leaf: the first by its text, so that the title does not depend on
  the order in which files were found.
* ``summary_from`` names the file the chosen summary came from: when that file changes or goes,
  the session is resolved again.

Whatever the order in which a sync (or several) finds the files, the titles are the same, and
``check_summary_titles`` (verify) finds any that are not what the rule gives.
"""

from __future__ import annotations

from collections.abc import Collection

import apsw
import orjson

SUMMARY_SOURCE = "summary"
# Set (in index.db's meta table) by every transaction that writes or drops a file's rows, and
# cleared with the summary titles resolved after them: a sync killed in between leaves it, and
# the next sync then resolves every Claude session's title (the files it read are not known).
PENDING_KEY = "summary_titles_pending"


def note_pending(connection: apsw.Connection) -> None:
    """Within a transaction that changes a file's rows: the summary titles are to be resolved."""
    connection.execute(
        "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) DO NOTHING",
        (PENDING_KEY,),
    )


def pending(connection: apsw.Connection) -> bool:
    """Whether a sync that changed rows ended before it resolved the summary titles."""
    return bool(connection.execute("SELECT 1 FROM meta WHERE key = ?", (PENDING_KEY,)).fetchall())


def resolve_pending(connection: apsw.Connection, changed: Collection[int], everything: bool) -> int:
    """resolve_summary_titles for ``changed`` (or, ``everything``: every Claude session's file),
    and the note cleared, in the caller's transaction."""
    if everything:
        changed = [
            file_id
            for (file_id,) in connection.execute(
                "SELECT file_id FROM sessions WHERE agent = 'claude'"
            )
        ]
    resolved = resolve_summary_titles(connection, changed)
    connection.execute("DELETE FROM meta WHERE key = ?", (PENDING_KEY,))
    return resolved


# The best summary of one session: of the entries of the session (newest first), the summary
# lines of its project folder that name one of them.
_BEST_SUMMARY = (
    "SELECT ls.summary, ls.file_id FROM entries AS e"
    " JOIN leaf_summaries AS ls ON ls.leaf_id = e.id"
    " JOIN files AS sf ON sf.id = ls.file_id"
    " WHERE e.session = ?1 AND sf.root = ?2 AND sf.project_dir = ?3"
    " ORDER BY e.seq DESC, ls.summary, ls.file_id LIMIT 1"
)
_CLAUDE_SESSION = (
    "SELECT s.file_id, s.file_title, s.file_title_source, s.title, s.title_source,"
    " s.summary_from, f.root, f.project_dir FROM sessions AS s JOIN files AS f ON f.id = s.file_id"
    " WHERE s.agent = 'claude'"
)


def resolve_summary_titles(connection: apsw.Connection, changed: Collection[int]) -> int:
    """Give each Claude session that the files ``changed`` (read or re-read by a sync, by id)
    may concern its summary title, or take it away; returns how many titles changed.

    Concerned: the sessions of those files; the sessions whose summary came from one of them,
    or from a file no longer indexed; and the other sessions of their project folders that
    hold the leaf of one of their summary lines.
    """
    ids = orjson.dumps(sorted(changed)).decode()
    concerned = {
        file_id
        for (file_id,) in connection.execute(
            "SELECT file_id FROM sessions WHERE agent = 'claude' AND"
            " (file_id IN (SELECT value FROM json_each(?1))"
            " OR summary_from IN (SELECT value FROM json_each(?1))"
            " OR (summary_from IS NOT NULL AND summary_from NOT IN (SELECT id FROM files)))",
            (ids,),
        )
    }
    # From the summary lines of the changed files to the sessions of their folders (CROSS JOIN
    # keeps that order: the work grows with what changed, not with every Claude session).
    concerned |= {
        session
        for (session,) in connection.execute(
            "SELECT DISTINCT s.file_id FROM json_each(?1) AS changed"
            " CROSS JOIN leaf_summaries AS ls ON ls.file_id = changed.value"
            " CROSS JOIN files AS lf ON lf.id = ls.file_id"
            " CROSS JOIN sessions AS s ON s.project_dir = lf.project_dir"
            " JOIN files AS f ON f.id = s.file_id AND f.root = lf.root"
            # (+: the folder's index finds them, not the agent's, which holds every session.)
            " WHERE +s.agent = 'claude' AND s.file_id NOT IN (SELECT value FROM json_each(?1))"
            " AND EXISTS (SELECT 1 FROM entries AS e WHERE e.session = s.file_id"
            " AND e.id = ls.leaf_id)",
            (ids,),
        )
    }
    changes = 0
    for file_id in sorted(concerned):
        row = connection.execute(f"{_CLAUDE_SESSION} AND s.file_id = ?", (file_id,)).fetchall()
        wanted = _title_of(connection, row[0])
        if wanted != (row[0][3], row[0][4], row[0][5]):
            connection.execute(
                "UPDATE sessions SET title = ?, title_source = ?, summary_from = ?"
                " WHERE file_id = ?",
                (*wanted, file_id),
            )
            changes += 1
    return changes


def _title_of(
    connection: apsw.Connection, session: tuple[object, ...]
) -> tuple[object, object, int | None]:
    """(title, title_source, summary_from) the rule gives a Claude session row of
    _CLAUDE_SESSION."""
    file_id, file_title, file_title_source, *_, root, project_dir = session
    if file_title is not None:
        return file_title, file_title_source, None
    best = list(connection.execute(_BEST_SUMMARY, (file_id, root, project_dir)))
    if not best:
        return None, None, None
    return best[0][0], SUMMARY_SOURCE, best[0][1]


def check_summary_titles(connection: apsw.Connection) -> dict[str, str]:
    """The Claude sessions whose title is not what the rule gives (path -> what differs):
    verify's check of what no single file decides."""
    wrong = {}
    for session in connection.execute(_CLAUDE_SESSION).fetchall():
        wanted = _title_of(connection, session)
        if wanted != (session[3], session[4], session[5]):
            ((path,),) = connection.execute(
                "SELECT path FROM sessions WHERE file_id = ?", (session[0],)
            )
            wrong[path] = (
                f"title: {session[3]!r} ({session[4]}), its summary lines give {wanted[0]!r}"
            )
    return wrong
