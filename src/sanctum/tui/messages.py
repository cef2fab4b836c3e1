"""The messages a reading thread posts to its app: one module for both apps.

A reading loop (:mod:`sanctum.live`) runs in a thread worker; what it hands the UI thread
crosses as one of these, so the UI only ever sees frozen frames.
"""

from __future__ import annotations

from textual.message import Message

from sanctum.live.board_feed import Board
from sanctum.live.pacing import Severity
from sanctum.model.snapshot import SanctumSnapshot


class SnapshotReady(Message):
    """The reader folded a batch of events; here is the frozen result."""

    def __init__(self, snapshot: SanctumSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot


class BoardReady(Message):
    """The reader built a board; here it is, frozen."""

    def __init__(self, board: Board) -> None:
        super().__init__()
        self.board = board


class ReaderNotice(Message):
    """Something the user should know about the file itself (reset, unusable)."""

    def __init__(self, text: str, severity: Severity) -> None:
        super().__init__()
        self.text = text
        self.severity = severity
