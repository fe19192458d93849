"""Conversation sessions: JSONL transcripts per `channel:peer`, windowing, compaction, dedupe, locks."""

from bot.sessions.lock import session_lock
from bot.sessions.records import MessageRecord, MetaRecord, Usage
from bot.sessions.store import SUMMARY_HEADER, Session, SessionCorrupt, SessionStore, session_filename
from bot.sessions.window import SIGN_TOOL_NAMES, history, must_keep

__all__ = [
    "SIGN_TOOL_NAMES",
    "SUMMARY_HEADER",
    "MessageRecord",
    "MetaRecord",
    "Session",
    "SessionCorrupt",
    "SessionStore",
    "Usage",
    "history",
    "must_keep",
    "session_filename",
    "session_lock",
]
