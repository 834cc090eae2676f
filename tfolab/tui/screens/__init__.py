"""The UI's screens: start, lab, guide, help."""
