"""Session text as it may leave the machine: every secret the detector finds replaced by
``[REDACTED:<kind>]``, in texts, in an entry's JSON and in JSON-ready answers; and the masked
preview (``sk-a…9f``) that names a secret without showing it.

The texts of one thing (an entry's strings, an answer's strings) are scanned together, and a
secret found in any of them is replaced wherever it occurs in them: an entry's text is made of
its JSON's strings, so the secret found in the JSON is the one to take out of the text. Each
string of a JSON object is read as ``key: value``, so that ``{"password": "…"}`` reads as the
assignment it is.

Entries are first scanned as their JSON texts with the escapes of whitespace and quotes undone
(``json_view``: no parsing), many at once (``entries``: one call of the detector for about
CHUNK_BYTES of them); only an entry in which that finds something is parsed and scanned string
by string, and its secrets replaced.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from xcsh_store.secrets.detect import MIN_SECRET, SEPARATOR, Secret, SecretDetector

REDACTED = "[REDACTED:{kind}]"
# The shortest piece of a known secret replaced where a text was cut.
FRAGMENT = 8
# Bytes of entries' JSON scanned in one call of the detector.
CHUNK_BYTES = 1 << 20
SEPARATOR_BYTES = SEPARATOR.encode()


class Redactor:
    """Replaces secrets with ``[REDACTED:<kind>]``."""

    def __init__(self, detector: SecretDetector | None = None) -> None:
        self.detector = detector or SecretDetector()

    def texts(self, texts: Sequence[str | None]) -> list[str | None]:
        """``texts`` with every secret found in any of them replaced in all of them, and the
        piece of one that a text cut from another kept (a title cut from a first message)."""
        secrets = self._find([text for text in texts if text])
        if not secrets:
            return list(texts)
        return [replace_known(_replace(text, secrets), secrets) if text else text for text in texts]

    def text(self, text: str, known: Sequence[Secret] = ()) -> str:
        """``text`` redacted; and the ``known`` secrets (found where ``text`` was cut from)
        replaced, whole or the piece of one at a cut."""
        redacted = self.texts([text])[0] or text
        return replace_known(redacted, known) if known else redacted

    def entries(
        self, pairs: Sequence[tuple[str | None, str | None]]
    ) -> list[tuple[str | None, str | None]]:
        """``entry`` of each (text, JSON) pair, the pairs scanned a chunk at a time. The pairs
        are of one session (a file's entries): a secret found in any of them is taken out of
        all, whole or the piece of it a cut left (a title cut from the first message holds
        the start of a key that no rule can tell is one)."""
        data = [(raw or text or "").encode("utf-8", "surrogatepass") for text, raw in pairs]
        out: list[tuple[str | None, str | None]] = []
        known: dict[str, Secret] = {}
        start = 0
        while start < len(pairs):
            end, size = start + 1, len(data[start])
            while end < len(pairs) and size + len(data[end]) <= CHUNK_BYTES:
                size += len(data[end])
                end += 1
            chunk = pairs[start:end]
            view = json_view_bytes(SEPARATOR_BYTES.join(data[start:end]))
            found = self.detector.find_in_bytes(view)
            if found:
                out += [self.entry(text, raw) for text, raw in chunk]
                known.update((secret.value, secret) for secret in found)
            else:
                out += chunk
            start = end
        if known:
            secrets = sorted(known.values(), key=lambda secret: -len(secret.value))
            out = [_known_pieces(text, raw, secrets) for text, raw in out]
        return out

    def entry(self, text: str | None, raw: str | None) -> tuple[str | None, str | None]:
        """An entry's text and its JSON (as text): the secrets in the JSON's strings replaced
        in both. A JSON that holds one is written again (compact, keys in their order)."""
        if not raw:
            return self.text(text) if text else text, raw
        seen = self.detector.find(json_view(raw))
        if not seen:
            return text, raw
        value = orjson.loads(raw)
        # What the strings hold, and what only the JSON's text showed (a value read across
        # an escape): each replaced where it occurs.
        secrets = self._find(list(json_strings(value)) + ([text] if text else []))
        secrets += [secret for secret in seen if secret not in secrets]
        secrets.sort(key=lambda secret: -len(secret.value))  # a longer one first, whole
        if not secrets:
            return text, raw
        redacted = orjson.dumps(_walk(value, secrets)).decode("utf-8")
        # The text is cut from the JSON's strings (index/model/facts.py: 2,048 characters of a
        # tool's output, 65,536 of an entry): a secret the cut split leaves a piece there.
        return (replace_known(_replace(text, secrets), secrets) if text else text), redacted

    def value(self, value: Any, known: Sequence[Secret] = ()) -> Any:
        """A JSON-ready value (dicts, lists, strings, numbers) with its strings redacted, and
        the ``known`` secrets replaced as by ``text``."""
        secrets = self._find(list(json_strings(value)))
        value = _walk(value, secrets) if secrets else value
        return _walk(value, [], known) if known else value

    def _find(self, texts: list[str]) -> list[Secret]:
        if not any(len(text) >= MIN_SECRET for text in texts):
            return []
        return self.detector.find_in(texts)


def mask(value: str) -> str:
    """A secret shown without giving it away: its first and last few characters (fewer for a
    short one), ``sk-a…9f``; a private key by its first line."""
    if value.startswith("-----BEGIN"):
        return value[: value.find("-----", len("-----BEGIN")) + len("-----")] + "…"
    head, tail = min(4, len(value) // 6), min(2, len(value) // 8)
    return value[:head] + "…" + (value[-tail:] if tail else "")


def json_view(raw: str) -> str:
    """JSON text read as the text it holds: escaped newlines, tabs and quotes made what they
    stand for, so that the rules see a key's value and where a line ends (the JSON itself,
    ``"password": "…"``, reads as an assignment)."""
    return json_view_bytes(raw.encode("utf-8", "surrogatepass")).decode("utf-8", "surrogatepass")


def json_view_bytes(raw: bytes) -> bytes:
    """``json_view`` of UTF-8 JSON text."""
    return raw.replace(b"\\n", b"\n").replace(b"\\t", b"\t").replace(b'\\"', b'"')


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


def _walk(value: Any, secrets: list[Secret], known: Sequence[Secret] = ()) -> Any:
    if isinstance(value, str):
        return replace_known(_replace(value, secrets), known)
    if isinstance(value, dict):
        return {name: _walk(item, secrets, known) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(item, secrets, known) for item in value]
    return value


def _known_pieces(
    text: str | None, raw: str | None, secrets: Sequence[Secret]
) -> tuple[str | None, str | None]:
    """An entry's text and JSON with the ``secrets`` of its session replaced as
    ``replace_known`` does (in each string of the JSON); looked at only where the start or
    the end of a line of one occurs."""
    probes = {
        piece
        for secret in secrets
        for line in secret.value.replace("\\n", "\n").split("\n")
        if len(line.strip()) >= FRAGMENT
        for piece in (line.strip()[:FRAGMENT], line.strip()[-FRAGMENT:])
    }
    if text and any(probe in text for probe in probes):
        text = replace_known(text, secrets)
    if raw and any(probe in raw for probe in probes):
        raw = orjson.dumps(_walk(orjson.loads(raw), [], secrets)).decode("utf-8")
    return text, raw


def replace_known(text: str, secrets: Sequence[Secret]) -> str:
    """Each of ``secrets`` replaced in a text that may hold only a piece of it (an excerpt, a
    summary cut short): every line of it, and where a line was cut, the part of it left
    (at least FRAGMENT characters, from its start or up to its end). A piece counts only
    where a cut can have left it: a line's start where the text ends or breaks off, its end
    where the text begins or resumes; the same characters elsewhere are other text
    (``${env.AUTH0_DOMAIN}`` shares a start with ``env.AUTH0_CLIENT_SECRET``)."""
    for secret in secrets:
        mark = REDACTED.format(kind=secret.kind)
        for line in secret.value.replace("\\n", "\n").split("\n"):
            line = line.strip()
            if len(line) < FRAGMENT:
                continue
            if line in text:
                text = text.replace(line, mark)
            text = _cut_pieces(text, line, mark)
    return text


# What may follow a piece cut from the end of a text, or precede one cut from its start:
# the text's end or start, a line break, the ellipsis of an excerpt.
CUT_MARKS = "\n\r…"


def _cut_pieces(text: str, line: str, mark: str) -> str:
    """The start of ``line`` where a text ends or breaks off, its end where a text begins or
    resumes: ``sk-proj-zA3h…``, ``…9fKz``."""
    for probe, forward in ((line[:FRAGMENT], True), (line[-FRAGMENT:], False)):
        at = text.find(probe)
        while at != -1:
            if forward:
                end = at + FRAGMENT
                while end < len(text) and end - at < len(line) and text[end] == line[end - at]:
                    end += 1
                start = at
                cut = end == len(text) or text[end] in CUT_MARKS
            else:
                start, end = at, at + FRAGMENT
                back = len(line) - FRAGMENT
                while start > 0 and back > 0 and text[start - 1] == line[back - 1]:
                    start, back = start - 1, back - 1
                cut = start == 0 or text[start - 1] in CUT_MARKS
            if cut:
                text = text[:start] + mark + text[end:]
                at = text.find(probe, start + len(mark))
            else:
                at = text.find(probe, at + 1)
    return text


def _replace(text: str, secrets: list[Secret]) -> str:
    """Each secret (longest first) replaced where it occurs: as found, JSON-escaped (a tool's
    arguments shown as JSON), or piece by piece where it ran across texts scanned as one.
    The secrets found within one text go first: a piece of one that ran across (the start of
    a key cut in a title, read on into the next text) is also the start of the whole key in
    another text, and replacing it first would leave the rest of that key."""
    for secret in sorted(secrets, key=lambda secret: SEPARATOR in secret.value):
        mark = REDACTED.format(kind=secret.kind)
        for piece in secret.value.split(SEPARATOR):
            if len(piece) < MIN_SECRET:
                continue
            for form in {piece, orjson.dumps(piece).decode("utf-8")[1:-1]}:
                if form in text:
                    text = text.replace(form, mark)
    return text
