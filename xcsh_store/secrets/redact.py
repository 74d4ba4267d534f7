"""Session text as it may leave the machine: every secret the detector finds replaced by
``[REDACTED:<kind>]``, in texts, in an entry's JSON and in JSON-ready answers; and the masked
preview (``sk-a…9f``) that names a secret without showing it.

The texts of one thing (an entry's strings, an answer's strings) are scanned together, and a
secret found in any of them is replaced wherever it occurs in them: an entry's text is made of
its JSON's strings, so the secret found in the JSON is the one to take out of the text. Each
string of a JSON object is read as ``key: value``, so that ``{"password": "…"}`` reads as the
assignment it is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from xcsh_store.secrets.detect import MIN_SECRET, SEPARATOR, Secret, SecretDetector

REDACTED = "[REDACTED:{kind}]"


class Redactor:
    """Replaces secrets with ``[REDACTED:<kind>]``; ``redacted`` counts the secrets replaced."""

    def __init__(self, detector: SecretDetector | None = None) -> None:
        self.detector = detector or SecretDetector()
        self.redacted = 0

    def texts(self, texts: Sequence[str | None]) -> list[str | None]:
        """``texts`` with every secret found in any of them replaced in all of them."""
        secrets = self._find([text for text in texts if text])
        if not secrets:
            return list(texts)
        return [_replace(text, secrets) if text else text for text in texts]

    def text(self, text: str) -> str:
        return self.texts([text])[0] or text

    def entry(self, text: str | None, raw: str | None) -> tuple[str | None, str | None]:
        """An entry's text and its JSON (as text): the secrets in the JSON's strings replaced
        in both. A JSON that holds one is written again (compact, keys in their order)."""
        if not raw:
            return self.text(text) if text else text, raw
        value = orjson.loads(raw)
        secrets = self._find(list(json_strings(value)) + ([text] if text else []))
        if not secrets:
            return text, raw
        redacted = orjson.dumps(_walk(value, secrets)).decode("utf-8")
        return (_replace(text, secrets) if text else text), redacted

    def value(self, value: Any) -> Any:
        """A JSON-ready value (dicts, lists, strings, numbers) with its strings redacted."""
        secrets = self._find(list(json_strings(value)))
        return _walk(value, secrets) if secrets else value

    def _find(self, texts: list[str]) -> list[Secret]:
        if not any(len(text) >= MIN_SECRET for text in texts):
            return []
        secrets = self.detector.find_in(texts)
        self.redacted += len(secrets)
        return secrets


def mask(value: str) -> str:
    """A secret shown without giving it away: its first and last few characters (fewer for a
    short one), ``sk-a…9f``; a private key by its first line."""
    first_line = value.strip().split("\n", 1)[0]
    if first_line.startswith("-----BEGIN"):
        return first_line.rstrip("\\n") + "…"
    head, tail = min(4, len(value) // 6), min(2, len(value) // 8)
    return value[:head] + "…" + (value[-tail:] if tail else "")


def json_strings(value: Any, key: str | None = None) -> Iterator[str]:
    """The strings of a JSON value, each of an object with its key."""
    if isinstance(value, str):
        yield value if key is None else f"{key}: {value}"
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from json_strings(item, name if isinstance(name, str) else None)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from json_strings(item)


def _walk(value: Any, secrets: list[Secret]) -> Any:
    if isinstance(value, str):
        return _replace(value, secrets)
    if isinstance(value, dict):
        return {name: _walk(item, secrets) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(item, secrets) for item in value]
    return value


def _replace(text: str, secrets: list[Secret]) -> str:
    """Each secret (longest first) replaced where it occurs: as found, JSON-escaped (a tool's
    arguments shown as JSON), or piece by piece where it ran across texts scanned as one."""
    for secret in secrets:
        mark = REDACTED.format(kind=secret.kind)
        for piece in secret.value.split(SEPARATOR):
            if len(piece) < MIN_SECRET:
                continue
            for form in {piece, orjson.dumps(piece).decode("utf-8")[1:-1]}:
                if form in text:
                    text = text.replace(form, mark)
    return text
