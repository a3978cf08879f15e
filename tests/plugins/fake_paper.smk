# The test paper's own rule (tests/plugins/fake_paper.py): its scores of BM25's top candidates reranked. Its segment
# and score jobs are the suite's middle rule's (workflow/rules/rerank.smk), its table the suite's table rule's.

FAKE = EXP.plugins["fake_paper"]


rule fake_rerank:
    """BM25's candidates ordered by their score; the rest keep BM25's order."""
    input:
        run=pattern("trec_run", run="bm25"),
        scores=pattern("fake_scores", k=FAKE.candidates),
    output:
        pattern("trec_run", run="fake.{checkpoint}"),
    log:
        pattern("log", stage="aggregate", name="{collection}.fake.{checkpoint}"),
    shell:
        "python -m reranker fuse aggregate --method firstp --run {input.run} --scores {input.scores} --out {output} 2> {log}"
