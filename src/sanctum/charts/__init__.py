"""Pure drawing: glyphs, sparklines, the KL bar chart, the zoomable chart and the overlay
chart, with their scales and windows. No Textual.
"""
