"""Models and what runs them: forward passes, objectives, batching, sharded scoring, pretraining data (layer 2)."""
