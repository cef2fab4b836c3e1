"""The model: events folded into run state, frozen snapshots and the run's verdict (one run,
and the board of several). Imports health and the top-level modules: no Rich, no Textual.
"""
