ruleorder: evaluate_provided_run > evaluate


rule evaluate:
    """The configured measures (+ the collection's own), aggregate and per query."""
    input:
        run=P("trec_run"),
        qrels=P("qrels"),
    output:
        P("eval"),
    log:
        P("log", stage="evaluate", name="{collection}.{run}"),
    benchmark:
        P("benchmark", stage="evaluate", name="{collection}.{run}")
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("evaluate", collection=w.collection),
        id=collection_id,
    shell:
        "python -m reranker evaluate --config {params.config} --collection {params.id} --run {input.run}"
        " --qrels {input.qrels} --out {output} > {log}"


rule evaluate_provided_run:
    """A run that comes with a (run-only) collection, e.g. Birch's own Robust04 BM25+RM3 run."""
    input:
        run=lambda w: EXP.collection(w.collection)["run"],
        qrels=lambda w: EXP.collection(w.collection)["qrels"],
    output:
        P("eval", run="provided"),
    log:
        P("log", stage="evaluate", name="{collection}.provided"),
    benchmark:
        P("benchmark", stage="evaluate", name="{collection}.provided")
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("evaluate", collection=w.collection),
        id=collection_id,
    shell:
        "python -m reranker evaluate --config {params.config} --collection {params.id} --run {input.run}"
        " --qrels {input.qrels} --out {output} > {log}"
