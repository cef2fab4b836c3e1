"""The model: events folded into run state and frozen snapshots (one run, and the board of
several). No Rich, no Textual.
"""
