"""The dashboard in a browser: :mod:`~sanctum.web.policy` (the bounds and origins a served
dashboard is held to, stdlib only) and :mod:`~sanctum.web.server` (textual-serve's server
held to them, loaded only once the serve extra is known installed). The ``serve`` command
imports this package; nothing here imports the command back.
"""
