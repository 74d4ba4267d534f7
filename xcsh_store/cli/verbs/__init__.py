"""The verbs, one module per family, each imported only when one of its verbs is asked for
(``app.VERB_MODULES``): ``ls`` (listing); ``show``, ``search``, ``cat``, ``resume``
(sessions); ``usage``; ``history`` (prompts); ``sync``, ``gc``, ``verify``, ``migrate``,
``doctor``, ``restore``, ``forget`` (maintenance, with the doctor's diagnosis in health);
``sql``; ``push``, ``export``, ``team`` (team); ``watch``, ``serve``, ``mcp`` (live);
``prices``; ``secrets`` and ``--no-redact`` (redaction); ``completion``; ``demo``; ``pick``.

This package's front imports nothing, so that a verb's module loads only what it uses.
"""
