"""Judging a reproduction: tolerances, significance, verdicts, seeds, claims, effects, comparison, promotion (layer 2)."""
