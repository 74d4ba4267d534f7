"""The lean reads of usage first (usage_first.py), one module per kind of file: what each
finds of a file's requests (found.py), Claude Code's (claude.py), Codex's (codex.py), and those
of the agents whose reader reads the few lines that hold usage as the full read does (Gemini
CLI, Qwen Code, GitHub Copilot CLI: by_reader.py), and those of the sessions kept as documents
or trees of files (Gemini CLI's older chats, opencode's: documents.py)."""
