"""birch-repro: BERT document reranking with sentence-level evidence, reproducibly.

One module per stage (collections, index, retrieve, segment, train, score, fuse, evaluate,
tables); each is a Python API and a `python -m reranker <stage>` command.
"""

__version__ = "0.1.0"
