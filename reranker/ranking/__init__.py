"""Rankings from unit scores: Birch's fusion, aggregation baselines, Birch's evidence (layer 2)."""
