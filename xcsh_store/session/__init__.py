"""The live session: the tree an agent appends to, the context it rebuilds, finding sessions.

``manager`` holds the tree and the public surface of a session, ``session_file`` keeps its file
written (when, the append writer, the latched error), ``context`` rebuilds what the model sees at
a leaf, ``discovery`` finds and lists session files, ``upgrade`` rewrites old files in the
current format, and ``roots`` remembers session folders outside the agent dir.
"""
