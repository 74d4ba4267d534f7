"""A session as one self-contained HTML file (``xcsh-store export ID --format html``): the
messages of transcript.py rendered as the web app renders session text (markdown-it-py, nh3,
Pygments within a budget), its styles inline, no script and nothing fetched, so that it reads
the same from a mail attachment with the network off; folded parts are ``<details>``.

``--encrypt`` seals it: the page holds the document encrypted with AES-256-GCM under a key
derived from a passphrase (PBKDF2-HMAC-SHA256, PBKDF2_ITERATIONS), and a few lines of script
that ask for the passphrase and decrypt it with the browser's WebCrypto — for a page that goes
through hands that must not read it.
"""

from __future__ import annotations

import base64
import os

from markupsafe import Markup

from xcsh_store.format.tool_calls import FOLDED_DIFF_LINES, diff_size
from xcsh_store.format.transcript import Block, Transcript
from xcsh_store.web.highlight import Budget, Highlighter
from xcsh_store.web.markup import CODE_CLASS, Renderer, code_css, diff_html

# OWASP's figure for PBKDF2-HMAC-SHA256 (2023): about half a second in a browser.
PBKDF2_ITERATIONS = 600_000
SALT_BYTES = 16
NONCE_BYTES = 12
# The highlighting an export may do in all (past it, code is plain text).
HIGHLIGHT_SECONDS = 10.0

_STYLE = """
:root { color-scheme: light dark; --muted: #667; --line: #d8dae0; --user: #eef4ff;
  --tool: #f6f6f4; --add: #e6ffec; --del: #ffebe9; --mark: #ffd580; }
@media (prefers-color-scheme: dark) { :root { --muted: #99a; --line: #333842;
  --user: #1b2433; --tool: #1e1f22; --add: #12321d; --del: #3c1618; --mark: #6b4f0e; } }
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 0 auto;
  padding: 1rem; overflow-wrap: anywhere; }
header dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem;
  color: var(--muted); }
header dd { margin: 0; }
section { border-top: 1px solid var(--line); padding: .5rem 0; }
section.user { background: var(--user); padding: .5rem .75rem; border-radius: 6px; }
section.tool { background: var(--tool); padding: .25rem .75rem; }
h1 { font-size: 1.35rem; }
h2 { font-size: .85rem; color: var(--muted); font-weight: 600; margin: .25rem 0; }
pre { overflow-x: auto; padding: .5rem; border: 1px solid var(--line); border-radius: 4px;
  font-size: 13px; }
summary { cursor: pointer; color: var(--muted); }
.diff .add { background: var(--add); display: block; }
.diff .del { background: var(--del); display: block; }
.diff .hunk { color: var(--muted); }
.diff .file { font-weight: 600; }
.diff mark { background: var(--mark); color: inherit; border-radius: 2px; }
.title { font-weight: 600; margin: .25rem 0; }
"""

_ROLES = {"user": "User", "assistant": "Assistant", "tool": "Tool", "summary": "Summary"}


def page(document: Transcript) -> str:
    """The session as a self-contained HTML document."""
    return _document(_title(document), _rendered(document))


def sealed_page(document: Transcript, passphrase: str) -> str:
    """:func:`page`'s body encrypted under ``passphrase``; the page decrypts it in the browser."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

    body = _rendered(document)
    salt, nonce = os.urandom(SALT_BYTES), os.urandom(NONCE_BYTES)
    derive = PBKDF2HMAC(hashes.SHA256(), 32, salt, PBKDF2_ITERATIONS)
    key = derive.derive(passphrase.encode("utf-8"))
    sealed = AESGCM(key).encrypt(nonce, str(body).encode("utf-8"), None)
    fields = {"salt": salt, "nonce": nonce, "data": sealed}
    encoded = {name: base64.b64encode(value).decode("ascii") for name, value in fields.items()}
    locked = Markup(_LOCKED).format(iterations=PBKDF2_ITERATIONS, **encoded)
    return _document("Encrypted session", locked, script=Markup(_UNSEAL))


def _title(document: Transcript) -> str:
    title = document.title
    return title if len(title) <= 120 else title[:119] + "…"


def _rendered(document: Transcript) -> Markup:
    highlighter = Highlighter(workers=1)
    try:
        return _body(document, Renderer(highlighter), Budget(HIGHLIGHT_SECONDS))
    finally:
        highlighter.close()


def _document(title: str, body: Markup, script: Markup | None = None) -> str:
    style = Markup(_STYLE + code_css())
    tail = Markup("<script>{}</script>").format(script) if script else ""
    return str(
        Markup(
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="referrer" content="no-referrer">'
            "<title>{}</title><style>{}</style></head>\n<body>{}{}</body></html>\n"
        ).format(title, style, body, tail)
    )


def _body(document: Transcript, renderer: Renderer, budget: Budget) -> Markup:
    rows = Markup("").join(
        Markup("<dt>{}</dt><dd>{}</dd>").format(name, value) for name, value in document.facts
    )
    parts = [Markup('<header><h1>{}</h1><dl>{}</dl></header><main id="session">').format(
        _title(document), rows
    )]  # fmt: skip
    for message in document.messages:
        heading = _ROLES.get(message.role, message.role)
        details = " · ".join(part for part in (message.model, message.timestamp) if part)
        blocks = Markup("").join(_block(block, renderer, budget) for block in message.blocks)
        parts.append(
            Markup('<section class="{}"><h2>{}{}</h2>{}</section>').format(
                message.role, heading, f" · {details}" if details else "", blocks
            )
        )
    parts.append(Markup("</main>"))
    return Markup("").join(parts)


def _block(block: Block, renderer: Renderer, budget: Budget) -> Markup:
    title = Markup('<p class="title">{}</p>').format(block.title) if block.title else ""
    if block.kind == "text":
        return Markup("{}{}").format(title, renderer.markdown(block.text, budget))
    if block.kind == "thinking":
        return _folded("Thinking", Markup("<pre>{}</pre>").format(block.text))
    if block.kind == "command":
        return Markup("{}{}").format(title, _code(block.text, "bash", renderer, budget))
    if block.kind == "diff":
        diff = Markup('<pre class="diff"><code>{}</code></pre>').format(diff_html(block.text))
        if block.text.count("\n") > FOLDED_DIFF_LINES:
            return Markup("{}{}").format(title, _folded(diff_size(block.text), diff))
        return Markup("{}{}").format(title, diff)
    if block.kind == "read":
        return Markup("<p><strong>{}</strong> <code>{}</code></p>").format(block.title, block.text)
    if block.kind == "output":
        label = f"{'Error from' if block.is_error else 'Output of'} {block.title}"
        return _folded(label, Markup("<pre>{}</pre>").format(block.text))
    return Markup("{}{}").format(title, _code(block.text, "json", renderer, budget))


def _code(text: str, language: str, renderer: Renderer, budget: Budget) -> Markup:
    inside = renderer.code(text, language, budget)
    return Markup('<pre class="{}"><code>{}</code></pre>').format(CODE_CLASS, inside)


def _folded(summary: str, inside: Markup) -> Markup:
    return Markup("<details><summary>{}</summary>{}</details>").format(summary, inside)


_LOCKED = """<form id="unlock"><h1>Encrypted session</h1>
<p>This page holds a session encrypted with a passphrase (AES-256-GCM).</p>
<p><input id="passphrase" type="password" autocomplete="off" placeholder="Passphrase">
<button type="submit">Open</button></p><p id="failed" hidden>Wrong passphrase.</p>
</form><div id="sealed" data-salt="{salt}" data-nonce="{nonce}" data-data="{data}"
data-iterations="{iterations}" hidden></div>"""

_UNSEAL = """
const bytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
document.getElementById("unlock").addEventListener("submit", async (event) => {
  event.preventDefault();
  const sealed = document.getElementById("sealed").dataset;
  const secret = new TextEncoder().encode(document.getElementById("passphrase").value);
  const material = await crypto.subtle.importKey("raw", secret, "PBKDF2", false, ["deriveKey"]);
  const key = await crypto.subtle.deriveKey(
    {name: "PBKDF2", salt: bytes(sealed.salt), iterations: Number(sealed.iterations),
     hash: "SHA-256"}, material, {name: "AES-GCM", length: 256}, false, ["decrypt"]);
  try {
    const plain = await crypto.subtle.decrypt(
      {name: "AES-GCM", iv: bytes(sealed.nonce)}, key, bytes(sealed.data));
    document.body.innerHTML = new TextDecoder().decode(plain);
  } catch (error) {
    document.getElementById("failed").hidden = false;
  }
});
"""
