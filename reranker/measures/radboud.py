"""The Radboud thesis' nDCG@20 (Verbrugge 2021), on Cranfield's gains.

Its code (MauiGonzo/BERT-BM25-Thesis-Project, Code/data_utils.py and Code/utils.py) reads the raw
`cranqrel` codes, counts each query's -1 document as a complete answer (code 1), gives gain
5 - code (unjudged 0) and takes linear-gain nDCG@20 with the ideal DCG over all the query's judged
documents, averaged over each fold's 45 test queries and then over the 5 folds: with equal folds,
the mean over the 225 queries. That is trec_eval's ndcg_cut.20 on remapped judgments.

Our Cranfield gains (collections.yaml `grades`) are already 5 - code for codes 1..4; the -1
document has gain 0 there (no interest). So the thesis' measure is nDCG@20 with gain 0 counted 4.
"""

from __future__ import annotations

from reranker.measures.base import NamedMeasure, register

THESIS_GAINS = {-1: 4, 1: 4, 2: 3, 3: 2, 4: 1}  # raw cranqrel code -> the thesis' gain

RADBOUD_NDCG = register(NamedMeasure(
    name="RadboudNDCG@20",
    expression="nDCG(gains={0:4,1:1,2:2,3:3,4:4})@20",
    label="nDCG@20 (thesis)",
    description="the Radboud thesis' nDCG@20: Cranfield's -1 document counted as a complete answer, gain 5 - code",
    collections=("cranfield",),
))
