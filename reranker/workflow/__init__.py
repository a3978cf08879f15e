"""The DAG's Python: the experiment's rows and paths, the run lock, the run's end, the catalog (layer 6)."""
