# The test paper's rules (tests/plugins/fake_paper.py): BM25's top candidates as whole documents in a file of its
# own, scored by a hub checkpoint into another, reranked; one table of those and two evaluations the suite makes.

FAKE = EXP.plugins["fake_paper"]


rule fake_segment:
    """The first stage's top candidates as whole documents (its own file: the plugin's `fake_segments`)."""
    input:
        docs=pattern("docs"),
        run=pattern("trec_run", run="bm25"),
        topics=pattern("topics"),
    output:
        pattern("fake_segments", k=FAKE.candidates),
    log:
        pattern("log", stage="segment", name="{collection}.fake"),
    params:
        config=CONFIG_FILE,
        settings=settings("segment", section="fake_paper"),
    shell:
        "python -m reranker segment --config {params.config} --section fake_paper --docs {input.docs}"
        " --run {input.run} --topics {input.topics} --unit documents --out {output} 2> {log}"


rule fake_score:
    """Its checkpoint scores every candidate (no cache: a test's run)."""
    input:
        segments=pattern("fake_segments", k=FAKE.candidates),
        run=pattern("trec_run", run="bm25"),
        topics=pattern("topics"),
        qrels=pattern("qrels"),
    output:
        scores=pattern("fake_scores", k=FAKE.candidates),
        meta=pattern("fake_scores", k=FAKE.candidates) + ".meta.json",
    log:
        pattern("log", stage="score", name="{collection}.{checkpoint}.fake"),
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("score", checkpoint=w.checkpoint, section="fake_paper"),
        model=lambda w: EXP.checkpoint_ref(w.checkpoint),
    shell:
        "python -m reranker score --config {params.config} --section fake_paper --checkpoint {wildcards.checkpoint}"
        " --model {params.model:q} --no-cache --segments {input.segments} --run {input.run} --topics {input.topics}"
        " --qrels {input.qrels} --threads 1 --out {output.scores} 2> {log}"


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


rule fake_paper_table:
    """Its rows, with the suite's significance marks."""
    input:
        spec_files("fake_paper_1"),
        spec=PATH("table_spec", table="fake_paper_1"),
    output:
        md=PATH("table", table="fake_paper_1"),
        numbers=PATH("numbers", table="fake_paper_1"),
    log:
        PATH("log", stage="tables", name="fake_paper_1"),
    params:
        caption=FAKE.section.get("caption", "A fourth paper's table"),
        out=lambda w, output: output.md[: -len(".md")],
    shell:
        "python -m reranker tables results --spec {input.spec} --measures AP@1000 P@20 --baseline-row BM25"
        " {SIGNIFICANCE} --caption {params.caption:q} --formats md --out {params.out} --numbers {output.numbers} > {log}"
