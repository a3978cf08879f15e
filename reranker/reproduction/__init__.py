"""Judging a reproduction: tolerances, significance, verdicts, seeds, claims, effects, promotion (layer 2)."""
