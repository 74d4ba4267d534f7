"""The session file format: bytes on disk to entry dicts and back.

Reading lines leniently (``loader``), writing them byte-for-byte as the reference agent does
(``jsonl``), bringing old entries to the current version in memory (``versions``), the storage
that appends and rewrites files safely (``storage``), what an entry becomes before it is written
(``persist``), the content-addressed store its images move to (``blobs``), what an entry says
and how a new one is built (``entries``), the model context rebuilt at a leaf (``context``: the
path to the root, compaction-aware; pure, read by the live session and the index alike), and
the session folders outside ``<agent>/sessions`` the manager records and every sync scans
(``session_roots``).
"""
