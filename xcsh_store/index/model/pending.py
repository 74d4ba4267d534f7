"""What a sync left for later, as a read asks it: the files whose entries (usage first,
write/entries_later.py) or search rows (write/text_later.py) are still to come. Plain counts,
so that a read that only reports them loads none of the sync."""

from __future__ import annotations

import apsw


def pending_entry_files(connection: apsw.Connection) -> int:
    """How many files have their usage rows but not yet their entry rows."""
    ((count,),) = connection.execute("SELECT count(*) FROM files WHERE entries_pending = 1")
    return count


def pending_text_files(connection: apsw.Connection) -> int:
    """How many files' entries may lack their search rows (searches are partial until then)."""
    ((count,),) = connection.execute("SELECT count(*) FROM files WHERE text_pending = 1")
    return count
