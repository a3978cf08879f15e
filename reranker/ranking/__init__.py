"""Rankings from unit scores: Birch's evidence (layer 2)."""
