"""Secrets in sessions: finding them (``detect``: Kingfisher's and detect-secrets' rules),
replacing them in what leaves the machine (``redact``: push, export, serve beyond loopback,
mcp), and listing them where they are so that their owner can rotate them (``scan``).

The session files and the local index keep every secret: they are the owner's.
"""

from xcsh_store.secrets.detect import Secret, SecretDetector
from xcsh_store.secrets.redact import REDACTED, Redactor, mask
from xcsh_store.secrets.scan import FileSecrets, SessionSecret, session_secrets

__all__ = [
    "REDACTED",
    "FileSecrets",
    "Redactor",
    "Secret",
    "SecretDetector",
    "SessionSecret",
    "mask",
    "session_secrets",
]
