"""Tables, figures and records built from a run's numbers (layer 3)."""
