rule index:
    """A Lucene index with positions, docvectors and raw text."""
    input:
        docs=pattern("docs"),
    output:
        directory(pattern("index")),
    log:
        pattern("log", stage="index", name="{collection}"),
    benchmark:
        pattern("benchmark", stage="index", name="{collection}")
    priority: job_priority(THREADS)
    conda:
        ENV
    threads: THREADS
    params:
        config=CONFIG_FILE,
        settings=settings("index"),
    shell:
        "python -m reranker index --config {params.config} --docs {input.docs} --index {output}" " --threads {threads} 2> {log}"


rule retrieve:
    """A first-stage run (BM25, BM25+RM3) to `retrieval.depth`, with per-collection and per-fold parameters."""
    input:
        unpack(lambda w: EXP.retrieval_inputs(w.collection, w.model)),
        index=pattern("index"),
        topics=pattern("topics"),
    output:
        pattern("trec_run", run="{model}"),
    log:
        pattern("log", stage="retrieve", name="{collection}.{model}"),
    benchmark:
        pattern("benchmark", stage="retrieve", name="{collection}.{model}")
    priority: job_priority(THREADS)
    conda:
        ENV
    threads: THREADS
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("retrieve", collection=w.collection, model=w.model),
        id=collection_id,
        folds=lambda w, input: f"--folds {input.folds}" if "folds" in input.keys() else "",
    shell:
        "python -m reranker retrieve --config {params.config} --collection {params.id} --model {wildcards.model}"
        " --index {input.index} --topics {input.topics} {params.folds} --threads {threads} --out {output} 2> {log}"


rule provided_run:
    """A run that comes with the collection (its `runs`, e.g. the Radboud thesis' own BM25), checked against the
    collection's queries, judgments and documents, then copied in as a first stage."""
    input:
        run=lambda w: EXP.provided_file(w.collection, w.provided),
        docs=pattern("docs"),
        topics=pattern("topics"),
        qrels=pattern("qrels"),
    output:
        pattern("trec_run", run="{provided}"),
    log:
        pattern("log", stage="retrieve", name="{collection}.{provided}"),
    benchmark:
        pattern("benchmark", stage="retrieve", name="{collection}.{provided}")
    wildcard_constraints:
        provided=wildcard_pattern(EXP.provided_names),
    conda:
        ENV
    shell:
        "python -m reranker retrieve provided --run {input.run} --docs {input.docs} --topics {input.topics}"
        " --qrels {input.qrels} --out {output} > {log}"
