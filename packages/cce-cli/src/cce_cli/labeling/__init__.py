"""Helping people label: pooled judging and real queries mined from the event log."""
