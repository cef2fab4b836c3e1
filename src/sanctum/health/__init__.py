"""Health: levels, the rule table, the judges (one rule, every rule) and the range contracts.

Imports only the top-level modules and telemetry: no Rich, no Textual, nothing of the model.
"""
