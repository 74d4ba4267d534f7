"""What a session points at besides its lines: artifact files of big tool outputs (``store``),
tool output streamed and truncated on its way there (``output``), and the internal URLs that
name all of it (``urls``)."""
