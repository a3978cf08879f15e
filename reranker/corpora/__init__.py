"""Test collections: documents, queries and qrels through one interface, one module per source (layer 2)."""
