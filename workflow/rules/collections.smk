rule export_collection:
    """Docs (JSONL), topics (TSV), qrels (TREC) and statistics of one collection."""
    output:
        docs=f"{WORK}/collections/{{collection}}/docs.jsonl",
        topics=f"{WORK}/collections/{{collection}}/topics.tsv",
        qrels=f"{WORK}/collections/{{collection}}/qrels.txt",
        stats=f"{WORK}/collections/{{collection}}/stats.json",
    params:
        id=lambda w: SLUG_TO_ID[w.collection],
        out=lambda w: f"{WORK}/collections/{w.collection}",
    log:
        f"{WORK}/logs/export/{{collection}}.log",
    shell:
        "{PY} -m reranker collections export --collection {params.id} --config {RESOLVED_CONFIG}"
        " --out {params.out} 2> {log}"
