"""Headless documents: check, summary, diff, the learning gate, --once, rollouts; each built
from a whole log and shown as text, JSON or JUnit.
"""
