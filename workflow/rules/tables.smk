BASELINE_SLUGS = [slug(c) for c in CFG["baselines"]["collections"]]
PROVIDED_SLUGS = [slug(c) for c in CFG["baselines"].get("provided_runs", [])]
fail_fast_on_missing_files(CFG["baselines"]["collections"] + CFG["baselines"].get("provided_runs", []))

TABLES = [
    f"{RESULTS}/tables/baselines.md",
    f"{RESULTS}/tables/dataset_stats.md",
]


rule baselines_table:
    """BM25 and BM25+RM3 on every baseline collection (+ provided runs, such as Birch's Robust04 run)."""
    input:
        evals=[f"{WORK}/eval/{s}/{m}.json" for s in BASELINE_SLUGS for m in BASE_RUNS],
        provided=[f"{WORK}/eval/{s}/provided.json" for s in PROVIDED_SLUGS],
    output:
        md=f"{RESULTS}/tables/baselines.md",
        csv=f"{RESULTS}/tables/baselines.csv",
        numbers=f"{RESULTS}/numbers/baselines.json",
    params:
        specs=" ".join(
            [f"{SLUG_TO_ID[s]}:{RUN_LABELS[m]}:{WORK}/eval/{s}/{m}.json" for s in BASELINE_SLUGS for m in BASE_RUNS]
            + [f"{SLUG_TO_ID[s]}:{RUN_LABELS['provided']}:{WORK}/eval/{s}/provided.json" for s in PROVIDED_SLUGS]
        ),
        caption=(
            f"Lucene baselines (pyserini), depth {CFG['retrieval']['depth']}: "
            f"BM25 (k1={CFG['retrieval']['models']['bm25']['k1']}, b={CFG['retrieval']['models']['bm25']['b']}) "
            f"and BM25+RM3 (fb_terms={CFG['retrieval']['models']['bm25_rm3']['fb_terms']}, "
            f"fb_docs={CFG['retrieval']['models']['bm25_rm3']['fb_docs']}, "
            f"original_query_weight={CFG['retrieval']['models']['bm25_rm3']['original_query_weight']})"
        ),
        measures=" ".join(MEASURES),
        out=f"{RESULTS}/tables/baselines",
    shell:
        "{PY} -m reranker tables results --eval {params.specs} --measures {params.measures}"
        " --caption {params.caption:q} --out {params.out} --numbers {output.numbers}"
        " --note 'AP is AP@1000 (trec_eval -M1000 map); † marks are not used in this table.'"
        " --command 'snakemake --cores all' > /dev/null"


rule dataset_stats_table:
    input:
        [f"{WORK}/collections/{s}/stats.json" for s in BASELINE_SLUGS],
    output:
        md=f"{RESULTS}/tables/dataset_stats.md",
        csv=f"{RESULTS}/tables/dataset_stats.csv",
        numbers=f"{RESULTS}/numbers/dataset_stats.json",
    params:
        specs=" ".join(f"{SLUG_TO_ID[s]}:{WORK}/collections/{s}/stats.json" for s in BASELINE_SLUGS),
        out=f"{RESULTS}/tables/dataset_stats",
    shell:
        "{PY} -m reranker tables stats --stats {params.specs} --caption 'Dataset statistics'"
        " --note 'Judged queries have at least one qrels line; relevant = grade >= the collection relevant_min_grade (default 1); doc length counts title + text words.'"
        " --out {params.out} --numbers {output.numbers} --command 'snakemake --cores all' > /dev/null"
