"""The live session: the tree an agent appends to, finding sessions.

``manager`` holds the tree and the public surface of a session, ``session_file`` keeps its file
written (when, the append writer, the latched error), ``discovery`` finds and lists session
files, and ``upgrade`` rewrites old files in the current format. What the model sees at a leaf
(``format/context.py``) and the session folders outside the agent dir
(``format/session_roots.py``) are below, in format/, where the index reads them too.
"""
