"""The Textual apps (the dashboard and the run table), their stylesheet and widgets: the one
place Textual lives.
"""
