"""The stages of `python -m reranker STAGE` (layer 4): each a `main(argv)`."""
