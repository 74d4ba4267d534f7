"""xcsh-store: coding-agent session storage (xcsh/pi JSONL) with a SQLite index on top."""

__version__ = "0.1.0"

from .artifacts import AgentOutputManager, ArtifactManager  # noqa: F401
from .errors import InternalUrlError  # noqa: F401
from .output import (  # noqa: F401
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_COLUMN,
    DEFAULT_MAX_LINES,
    OutputSink,
    OutputSummary,
    TailBuffer,
    format_bytes,
    format_head_truncation_notice,
    format_tail_truncation_notice,
    sanitize_text,
    truncate_head,
    truncate_head_bytes,
    truncate_line,
    truncate_tail,
    truncate_tail_bytes,
)
from .urls import (  # noqa: F401
    InternalResource,
    apply_query,
    parse_query,
    path_to_query,
    read_internal_url,
    resolve_internal_url,
)
