"""Rebuild ``benchmarks/words.txt``, the corpus vocabulary, from the real session fixtures."""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "pi"
WORDS_FILE = Path(__file__).resolve().parent / "words.txt"

# Whole words only: lower-case or Capitalised. ALL-CAPS and camelCase tokens are identifiers, which
# the generator builds itself from these words.
_WORD = re.compile(r"[A-Za-z]+")
# A word seen once in 7 MB of sessions is mostly a typo or a name; prose needs two sightings, tool
# output (which repeats file contents) three.
_MIN_PROSE_COUNT = 2
_MIN_CODE_COUNT = 3


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                text = block.get("text") or block.get("thinking")
                if isinstance(text, str):
                    texts.append(text)
    return texts


def _count(texts: list[str], counter: Counter[str]) -> None:
    for text in texts:
        for word in _WORD.findall(text):
            if (word.islower() or word[1:].islower()) and 2 <= len(word) <= 14:
                counter[word.lower()] += 1


def count_words(fixture_dir: Path) -> tuple[Counter[str], Counter[str]]:
    """Word counts in conversation text (user, assistant, summaries) and in tool output."""
    prose: Counter[str] = Counter()
    tool_output: Counter[str] = Counter()
    for path in sorted(fixture_dir.glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(entry, dict):
                continue
            message = entry.get("message")
            if entry.get("type") == "message" and isinstance(message, dict):
                target = prose if message.get("role") in ("user", "assistant") else tool_output
                _count(_texts(message.get("content")), target)
            elif isinstance(entry.get("summary"), str):
                _count([entry["summary"]], prose)
    return prose, tool_output


def vocabulary(fixture_dir: Path) -> list[str]:
    """Prose words by falling frequency, then words only tool output uses (ties sort by name)."""
    prose, tool_output = count_words(fixture_dir)
    ranked = sorted(
        (w for w, n in prose.items() if n >= _MIN_PROSE_COUNT), key=lambda w: (-prose[w], w)
    )
    seen = set(ranked)
    ranked += sorted(
        (w for w, n in tool_output.items() if n >= _MIN_CODE_COUNT and w not in seen),
        key=lambda w: (-tool_output[w], w),
    )
    return ranked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--out", type=Path, default=WORDS_FILE)
    args = parser.parse_args()
    words = vocabulary(args.fixtures)
    args.out.write_text("\n".join(words) + "\n", encoding="utf-8")
    print(f"{len(words)} words -> {args.out}")


if __name__ == "__main__":
    main()
