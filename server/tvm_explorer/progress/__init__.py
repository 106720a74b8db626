"""Showing a compile's progress to a person (a bar on a terminal) or a program (JSON lines)."""
