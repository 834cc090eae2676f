"""The Textual UI: app.py (the App), screens/, widgets/, one tfolab.tcss."""
