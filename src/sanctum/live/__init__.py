"""Reading threads: the loops that follow one log or several and hand frozen snapshots to a UI,
and the trainer child process. No Textual.
"""
