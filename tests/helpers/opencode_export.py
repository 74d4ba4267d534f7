"""An ``opencode export`` document of a session whose every response recorded ``cost: 0``: the
shape of the shared session issue 35 reports (w12z/Cap: a paid reseller of OpenAI's model,
``packyapi/gpt-5.6-sol``, and a subscription, ``zhipuai-coding-plan/glm-5.2``), made here with
token counts of the same size, since that session's repository states no licence to copy it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

SESSION_ID = "ses_0922c7a27ffesyntheticCap01"
RESELLER = ("packyapi", "gpt-5.6-sol")
SUBSCRIPTION = ("zhipuai-coding-plan", "glm-5.2")
# Responses of each, as in the shared session.
RESELLER_RESPONSES, SUBSCRIPTION_RESPONSES = 72, 43
START_MS = 1_784_254_006_744


def _message(number: int, role: str, model: tuple[str, str], **info: Any) -> dict[str, Any]:
    message_id = f"msg_{number:06d}synthetic"
    text = {"type": "text", "text": f"step {number}", "id": f"prt_{number:06d}a",
            "sessionID": SESSION_ID, "messageID": message_id}  # fmt: skip
    fields = {
        "id": message_id, "sessionID": SESSION_ID, "role": role,
        "time": {"created": START_MS + number * 30_000},
    }  # fmt: skip
    if role == "user":
        fields |= {"agent": "build", "model": {"providerID": model[0], "modelID": model[1]}}
    else:
        fields |= {"providerID": model[0], "modelID": model[1], "mode": "build",
                   "path": {"cwd": "/home/user/cap", "root": "/"}, "cost": 0, **info}  # fmt: skip
    return {"info": fields, "parts": [text]}


def _tokens(number: int, model: tuple[str, str]) -> dict[str, Any]:
    """Of a size the shared session's are: under the 272K long-context threshold."""
    if model == RESELLER:
        tokens = {"input": 14_000 + number * 37, "output": 600 + number * 5, "reasoning": 800,
                  "cache": {"read": 140_000 + number * 100, "write": 0}}  # fmt: skip
    else:
        tokens = {"input": 10_000 + number * 13, "output": 300, "reasoning": 500,
                  "cache": {"read": 128, "write": 0}}  # fmt: skip
    tokens["total"] = tokens["input"] + tokens["output"] + tokens["cache"]["read"]
    return tokens


def reseller_export() -> dict[str, Any]:
    """The document: the subscription's responses, then the reseller's."""
    models = [SUBSCRIPTION] * SUBSCRIPTION_RESPONSES + [RESELLER] * RESELLER_RESPONSES
    messages = []
    for turn, model in enumerate(models):
        messages.append(_message(2 * turn, "user", model))
        messages.append(_message(2 * turn + 1, "assistant", model, tokens=_tokens(turn, model)))
    info = {
        "id": SESSION_ID, "slug": "neon-canyon", "directory": "/home/user/cap",
        "title": "Pick an engine for a light strategy game", "version": "1.15.6",
        "model": {"id": RESELLER[1], "providerID": RESELLER[0]},
        "time": {"created": START_MS, "updated": START_MS + len(messages) * 30_000},
    }  # fmt: skip
    return {"info": info, "messages": messages}


def write_reseller_export(path: Path) -> Path:
    """:func:`reseller_export` written at ``path``."""
    path.write_bytes(orjson.dumps(reseller_export()))
    return path
