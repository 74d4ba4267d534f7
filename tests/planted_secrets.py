"""Secrets of every kind the redaction must catch, made up in the formats their providers issue
(lengths, alphabets, prefixes, GitHub's checksum), each in a sentence as it turns up in a
session: a prompt, a command, a tool's output, an env dump. Made from a fixed seed, so every run
plants the same ones; none of them was ever valid.

``needles`` are the parts of each secret that must never leave the machine: the secret itself,
or for a PEM key each line of its body.
"""

from __future__ import annotations

import base64
import random
import string
import zlib
from dataclasses import dataclass

import orjson

_RANDOM = random.Random(26)
_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_BASE32 = string.ascii_uppercase + "234567"
_BASE64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"
_HEX = "0123456789abcdef"


def _chars(alphabet: str, count: int) -> str:
    return "".join(_RANDOM.choice(alphabet) for _ in range(count))


def _base62(number: int, width: int) -> str:
    digits = string.digits + string.ascii_uppercase + string.ascii_lowercase
    out = ""
    while number:
        number, digit = divmod(number, 62)
        out = digits[digit] + out
    return out.rjust(width, "0")


def _github_token(prefix: str) -> str:
    """GitHub's format: 30 random characters and the CRC32 of them in base62 (6)."""
    body = _chars(_ALNUM, 30)
    return f"{prefix}_{body}{_base62(zlib.crc32(body.encode()), 6)}"


def _jwt() -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(orjson.dumps(value)).decode().rstrip("=")

    claims = {"sub": _chars(_HEX, 12), "name": "Dana Reyes", "iat": 1767225600}
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{_chars(_URLSAFE, 43)}"


def _pem(label: str) -> tuple[str, tuple[str, ...]]:
    body = tuple(_chars(_BASE64, 64) for _ in range(6))
    text = "\n".join((f"-----BEGIN {label}-----", *body, f"-----END {label}-----"))
    return text, body


def _password() -> str:
    return _chars(_ALNUM, 6) + "!" + _chars(_ALNUM, 9)


@dataclass(frozen=True)
class Planted:
    """One secret: what it is, the sentence that holds it, what must never leave."""

    kind: str
    text: str
    needles: tuple[str, ...]


def _planted() -> list[Planted]:
    found: list[Planted] = []

    def plant(kind: str, secret: str, sentence: str) -> None:
        found.append(Planted(kind, sentence.format(secret=secret), (secret,)))

    openai = f"sk-proj-{_chars(_URLSAFE, 74)}T3BlbkFJ{_chars(_URLSAFE, 74)}"
    plant("openai", openai, "export OPENAI_API_KEY={secret}")
    anthropic = f"sk-ant-api03-{_chars(_URLSAFE, 93)}AA"
    plant("anthropic", anthropic, "the key is {secret} — why does the SDK say 401?")
    plant(
        "github",
        _github_token("ghp"),
        "git remote set-url origin https://x:{secret}@github.com/a/b",
    )
    plant("github", _github_token("gho"), "gh auth status shows token {secret}")
    fine_grained = f"github_pat_{_chars(_ALNUM, 22)}_{_chars(_ALNUM, 59)}"
    plant("github", fine_grained, 'GITHUB_TOKEN="{secret}" npm publish')
    plant("aws", "AKIA" + _chars(_BASE32, 16), "aws_access_key_id = {secret}")
    plant("aws", _chars(_BASE64, 40), "aws_secret_access_key = {secret}")
    plant("gcp", "AIza" + _chars(_URLSAFE, 35), 'const firebaseKey = "{secret}";')
    slack = f"xoxb-{_chars(string.digits, 12)}-{_chars(string.digits, 13)}-{_chars(_ALNUM, 24)}"
    plant("slack", slack, "SLACK_BOT_TOKEN={secret}")
    webhook = (
        f"https://hooks.slack.com/services/T{_chars(_UPPER, 8)}/B{_chars(_UPPER, 10)}/"
        f"{_chars(_ALNUM, 24)}"
    )
    plant("slack", webhook, "curl -X POST -d @msg.json {secret}")
    plant("stripe", "sk_live_" + _chars(_ALNUM, 99), "Stripe.api_key = '{secret}'")
    plant("stripe", "rk_live_" + _chars(_ALNUM, 24), "STRIPE_RESTRICTED_KEY={secret}")
    plant("npm", "npm_" + _chars(_ALNUM, 36), "//registry.npmjs.org/:_authToken={secret}")
    huggingface = "hf_" + _chars(string.ascii_letters, 34)
    plant("huggingface", huggingface, "HF_TOKEN={secret} python train.py")
    sendgrid = f"SG.{_chars(_URLSAFE, 22)}.{_chars(_URLSAFE, 43)}"
    plant("sendgrid", sendgrid, "SENDGRID_API_KEY='{secret}'")
    plant("gitlab", "glpat-" + _chars(_URLSAFE, 20), "GITLAB_TOKEN={secret}")
    plant("twilio", "SK" + _chars(_HEX, 32), "twilio api key: {secret}")
    plant("jwt", _jwt(), "Authorization: Bearer {secret}")
    password = _password()
    plant("url-password", password, "psql postgresql://deploy:{secret}@db.internal:5432/app")
    plant(
        "url-password", _password(), "REDIS_URL=redis://default:{secret}@cache-7.prod.acme.io:6379"
    )
    plant("env-password", _password(), "DB_PASSWORD={secret}")
    plant("env-password", _password(), 'MYSQL_ROOT_PASSWORD="{secret}"')
    plant("assignment", _chars(_ALNUM, 32), 'client_secret = "{secret}"')
    plant("assignment", _chars(_HEX, 40), "API_SECRET_KEY: '{secret}'")
    for label in ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY"):
        text, body = _pem(label)
        found.append(Planted("private-key", f"cat ~/.ssh/id\n{text}\n", body))
    # A service account's key file as `cat` shows it: JSON, the PEM's newlines escaped.
    text, body = _pem("PRIVATE KEY")
    account = {
        "type": "service_account",
        "project_id": "demo-411207",
        "private_key_id": _chars(_HEX, 40),
        "private_key": text + "\n",
        "client_email": "ci@demo-411207.iam.gserviceaccount.com",
    }
    found.append(Planted("private-key", orjson.dumps(account).decode(), body))
    return found


PLANTED = _planted()
