"""Glue between the Gradio page (app.py) and engine/ + viz/: per-visitor run control and the
functions that turn a Trace plus the visitor's selections into component values."""
