"""What a session points at besides its lines: artifact files of big tool outputs (``store``),
tool output streamed and truncated on its way there (``output``), the internal URLs that name
all of it (``urls``), the JSON query language of those URLs (``query``) and the pages the read
tool shows (``pages``)."""
