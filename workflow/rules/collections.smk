rule export_collection:
    """Docs (JSONL), topics (TSV), qrels (TREC) and statistics of one collection."""
    input:
        lambda w: EXP.loaded(EXP.slug_to_id[w.collection]).source_files(),  # local raw files; ir_datasets' cache is a store
    output:
        docs=pattern("docs"),
        topics=pattern("topics"),
        qrels=pattern("qrels"),
        stats=pattern("stats"),
    log:
        pattern("log", stage="export", name="{collection}"),
    benchmark:
        pattern("benchmark", stage="export", name="{collection}")
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("collections", collection=w.collection),
        id=collection_id,
        out=lambda w, output: os.path.dirname(output.docs),
    shell:
        "python -m reranker collections export --config {params.config} --collection {params.id}" " --out {params.out} 2> {log}"


rule folds:
    """The collection's own folds where it has them (Cranfield, Robust04), else a seeded split."""
    input:
        lambda w: EXP.loaded(EXP.slug_to_id[w.collection]).folds_files(),
    output:
        pattern("work_folds"),
    log:
        pattern("log", stage="folds", name="{collection}"),
    benchmark:
        pattern("benchmark", stage="folds", name="{collection}")
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("collections", collection=w.collection),
        id=collection_id,
    shell:
        "python -m reranker collections folds --config {params.config} --collection {params.id}" " --out {output} 2> {log}"
