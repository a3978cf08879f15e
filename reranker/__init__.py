"""birch-repro: BERT document reranking with sentence-level evidence, reproducibly.

One folder per layer, low to high: formats; core, measures; neural, ranking, reproduction; report;
stages (each a Python API and a `python -m reranker <stage>` command); experiments; workflow.
tests/test_layering.py holds the order.
"""

__version__ = "0.1.0"
