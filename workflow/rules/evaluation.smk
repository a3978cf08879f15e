ruleorder: evaluate_provided_run > evaluate


rule evaluate:
    """The configured measures (+ the collection's own), aggregate and per query."""
    input:
        run=pattern("trec_run"),
        qrels=pattern("qrels"),
    output:
        pattern("eval"),
    log:
        pattern("log", stage="evaluate", name="{collection}.{run}"),
    benchmark:
        pattern("benchmark", stage="evaluate", name="{collection}.{run}")
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
        pattern("eval", run="provided"),
    log:
        pattern("log", stage="evaluate", name="{collection}.provided"),
    benchmark:
        pattern("benchmark", stage="evaluate", name="{collection}.provided")
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("evaluate", collection=w.collection),
        id=collection_id,
    shell:
        "python -m reranker evaluate --config {params.config} --collection {params.id} --run {input.run}"
        " --qrels {input.qrels} --out {output} > {log}"


rule run_reproduction:
    """A run of ours against the original's own run of the same system (`reproduction:`): KTU, RBO, RMSE and paired
    t-tests by repro-eval, per topic; the seed index shows them beside ER and ΔRI."""
    input:
        unpack(lambda w: EXP.reproduction_inputs(w.pair)),
    output:
        pattern("run_reproduction"),
    log:
        pattern("log", stage="evaluate", name="reproduction.{pair}"),
    benchmark:
        pattern("benchmark", stage="evaluate", name="reproduction.{pair}")
    wildcard_constraints:
        pair=wildcard_pattern(CFG["reproduction"]),
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("reproduction", pair=w.pair),
    shell:
        "python -m reranker evaluate reproduction --config {params.config} --pair {wildcards.pair} --original {input.original}"
        " --run {input.run} --qrels {input.qrels} --out {output} > {log}"
