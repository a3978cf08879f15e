"""External check: Birch's own Robust04 BM25+RM3 run gives Birch's published 5-fold row.

Published targets (Akkalyoncu Yilmaz et al., EMNLP 2019, Table 1): AP 0.3033, P@20 0.3974;
nDCG@20 0.4514 on the same run. AP is trec_eval -M1000 map.
"""

from pathlib import Path

import pytest

from reranker.core.config import collection_config
from reranker.experiments import load_config
from reranker.stages.evaluate import evaluate_files

PUBLISHED = {"AP@1000": 0.3033, "P@20": 0.3974, "nDCG@20": 0.4514}


def test_birch_robust04_run_matches_published_row(birch_data):
    entry = collection_config(load_config(), "robust04")
    run, qrels = Path(entry["run"]), Path(entry["qrels"])
    if not run.exists():
        pytest.skip(f"{run} is absent (set BIRCH_DATA)")
    result = evaluate_files(run, qrels, list(PUBLISHED))
    assert result.queries == 249
    for measure, published in PUBLISHED.items():
        assert round(result.aggregate[measure], 4) == published, measure
