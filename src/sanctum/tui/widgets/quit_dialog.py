"""QuitDialog: what quitting means while the dashboard's own trainer is still running.

Quitting must never lose training by accident, so ``q`` over a live child asks: stop it
(the trainer saves a checkpoint and records ``interrupted``), detach (training goes on and
``sanctum RUN`` re-attaches), or cancel. The dialog only returns the choice; the app acts.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from sanctum.formatting import visible

QuitChoice = Literal["stop", "detach", "cancel"]


class QuitDialog(ModalScreen[QuitChoice]):
    """Stop training, detach from it, or cancel; ``s`` / ``d`` / ``escape`` (or ``q``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "choose('stop')", "Stop training"),
        Binding("d", "choose('detach')", "Detach"),
        Binding("escape,q,c", "choose('cancel')", "Cancel"),
    ]

    def __init__(self, run: str) -> None:
        super().__init__(id="quit-dialog")
        self.run = run

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-body"):
            yield Static("Training is still running.", id="quit-title")
            yield Static(
                "[b]Stop[/b]: the trainer saves a checkpoint and records 'interrupted'.\n"
                "[b]Detach[/b]: training goes on in the background; "
                f"re-attach with [b]sanctum {escape(visible(self.run))}[/b]",
                id="quit-text",
            )
            with Horizontal(id="quit-buttons"):
                yield Button("Stop training (s)", id="stop", variant="error")
                yield Button("Detach (d)", id="detach", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#quit-body").border_title = "Quit"
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_choose(event.button.id or "cancel")

    def action_choose(self, choice: str) -> None:
        """Close the dialog with ``choice`` (stop, detach or cancel)."""
        if choice == "stop":
            self.dismiss("stop")
        elif choice == "detach":
            self.dismiss("detach")
        else:
            self.dismiss("cancel")
