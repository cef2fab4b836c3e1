"""Health: levels, the rule table, the judges, range contracts and the run's verdict. Imports
only the top-level modules and telemetry: no Rich, no Textual.
"""
