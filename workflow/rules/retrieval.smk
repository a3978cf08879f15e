rule index:
    """A Lucene index with positions, docvectors and raw text."""
    input:
        docs=f"{WORK}/collections/{{collection}}/docs.jsonl",
    output:
        directory(f"{WORK}/indexes/{{collection}}"),
    threads: THREADS
    log:
        f"{WORK}/logs/index/{{collection}}.log",
    shell:
        "{PY} -m reranker index --docs {input.docs} --index {output} --threads {threads}"
        " --heap {JAVA_HEAP} 2> {log}"


rule retrieve:
    """BM25 or BM25+RM3 to depth `retrieval.depth`, parameters (per fold, if set) from the config."""
    input:
        index=f"{WORK}/indexes/{{collection}}",
        topics=f"{WORK}/collections/{{collection}}/topics.tsv",
    output:
        f"{WORK}/runs/{{collection}}/{{model}}.run",
    params:
        id=lambda w: SLUG_TO_ID[w.collection],
        depth=CFG["retrieval"]["depth"],
    threads: THREADS
    log:
        f"{WORK}/logs/retrieve/{{collection}}.{{model}}.log",
    shell:
        "{PY} -m reranker retrieve --index {input.index} --topics {input.topics} --model {wildcards.model}"
        " --config {RESOLVED_CONFIG} --collection {params.id} --depth {params.depth} --threads {threads}"
        " --out {output} 2> {log}"
