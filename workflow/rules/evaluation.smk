ruleorder: evaluate_provided_run > evaluate


rule evaluate:
    """AP@1000, P@20, nDCG@20 (+ the collection's own measures), aggregate and per query."""
    input:
        run=f"{WORK}/runs/{{collection}}/{{run}}.run",
        qrels=f"{WORK}/collections/{{collection}}/qrels.txt",
    output:
        f"{WORK}/eval/{{collection}}/{{run}}.json",
    params:
        measures=lambda w: " ".join(measures_for(w.collection)),
    shell:
        "{PY} -m reranker evaluate --run {input.run} --qrels {input.qrels} --measures {params.measures}"
        " --out {output} > /dev/null"


rule evaluate_provided_run:
    """A run that comes with a (run-only) collection, e.g. Birch's own Robust04 BM25+RM3 run."""
    input:
        run=lambda w: collection_entry(w.collection)["run"],
        qrels=lambda w: collection_entry(w.collection)["qrels"],
    output:
        f"{WORK}/eval/{{collection}}/provided.json",
    params:
        measures=lambda w: " ".join(measures_for(w.collection)),
    shell:
        "{PY} -m reranker evaluate --run {input.run} --qrels {input.qrels} --measures {params.measures}"
        " --out {output} > /dev/null"
