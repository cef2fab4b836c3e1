"""What Sanctum says in words: the dashboard's panels, the chart's words, the run table's
columns. No Textual.
"""
