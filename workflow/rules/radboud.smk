# Verbrugge (2021), the Radboud thesis: the first stage's top candidates reranked by BERT classifiers
# trained per fold, with training strategies as rows (enrich, MLM/NSP transfer, label heads, regression).
#   snakemake --cores all radboud

#   plugin: reranker/experiments/radboud.py (rows, captions, checkpoints, its segment, score and table jobs); included when it is active

RADBOUD = EXP.plugins["radboud"]
RADBOUD_CFG = CFG["radboud"]
PROVIDED = wildcard_pattern(RADBOUD_CFG["provided_candidates"])  # the collection's own runs that the baseline reranks too

for provided in RADBOUD_CFG["provided_candidates"]:  # name a missing run, and where it goes, before any job starts
    EXP.loaded(RADBOUD_CFG["collection"]).check_run(provided, DATA.made_by_rules())


wildcard_constraints:
    variant=wildcard_pattern(RADBOUD_CFG["variants"]),
    ranking=wildcard_pattern(RANKINGS),
    point="[0-9]+",


rule join_fold_scores:
    """The folds' test queries are disjoint: their scores joined make one file per reranker, the bytes `cat`
    makes; each fold's file is checked against the sidecar its score job wrote, and the whole gets its own."""
    input:
        lambda w: RADBOUD.fold_scores(w.variant, int(w.point), w.ranking),
    output:
        scores=pattern("radboud_joined"),
        meta=pattern("radboud_joined") + ".meta.json",
    log:
        pattern("log", stage="join", name="{collection}.{variant}.g{point}.{ranking}"),
    benchmark:
        pattern("benchmark", stage="join", name="{collection}.{variant}.g{point}.{ranking}")
    conda:
        ENV
    shell:
        "python -m reranker score join --parts {input} --out {output.scores} 2> {log}"


rule rerank_radboud:
    """Documents ordered by their score; the candidates beyond K keep the first stage's order."""
    input:
        run=pattern("trec_run", run=RADBOUD_CFG["first_stage"]),
        scores=pattern("radboud_joined"),
    output:
        pattern("trec_run", run="radboud.{variant}.g{point}.{ranking}"),
    log:
        pattern("log", stage="aggregate", name="{collection}.radboud.{variant}.g{point}.{ranking}"),
    benchmark:
        pattern("benchmark", stage="aggregate", name="{collection}.radboud.{variant}.g{point}.{ranking}")
    conda:
        ENV
    shell:
        "python -m reranker fuse aggregate --method firstp --run {input.run} --scores {input.scores} --out {output} 2> {log}"


rule radboud_agreement:
    """How alike a reranker ranks to the baseline reranker: Kendall's tau per query over the candidates, its mean."""
    input:
        run=pattern("trec_run", run="radboud.{variant}.g{point}.{ranking}"),
        reference=lambda w: PATH("trec_run", collection=w.collection, run=RADBOUD.baseline_run(int(w.point))),
    output:
        pattern("radboud_agreement"),
    log:
        pattern("log", stage="evaluate", name="{collection}.radboud.{variant}.g{point}.{ranking}.agreement"),
    benchmark:
        pattern("benchmark", stage="evaluate", name="{collection}.radboud.{variant}.g{point}.{ranking}.agreement")
    conda:
        ENV
    params:
        depth=RADBOUD_CFG["candidates"],
    shell:
        "python -m reranker evaluate agreement --run {input.run} --reference {input.reference} --depth {params.depth}"
        " --out {output} > {log}"


# A provided run's candidates (radboud `provided_candidates`: the thesis' own BM25), reranked by the baseline's per-fold
# checkpoints as ours are: segmented and joined by the same commands, scored by score_radboud, reranked by the same step.
use rule segment_documents as segment_provided_documents with:
    input:
        docs=pattern("docs"),
        run=pattern("trec_run", run="{provided}"),
        topics=pattern("topics"),
    output:
        pattern("segments", first_stage="{provided}", k=RADBOUD_CFG["candidates"], unit="documents"),
    log:
        pattern("log", stage="segment", name="{collection}.{provided}.documents"),
    benchmark:
        pattern("benchmark", stage="segment", name="{collection}.{provided}.documents")
    wildcard_constraints:
        provided=PROVIDED,


use rule join_fold_scores as join_provided_fold_scores with:
    input:
        lambda w: RADBOUD.fold_scores(w.variant, int(w.point), w.ranking, first_stage=w.provided),
    output:
        scores=pattern("radboud_joined_on"),
        meta=pattern("radboud_joined_on") + ".meta.json",
    log:
        pattern("log", stage="join", name="{collection}.{variant}.g{point}.{ranking}.on-{provided}"),
    benchmark:
        pattern("benchmark", stage="join", name="{collection}.{variant}.g{point}.{ranking}.on-{provided}")
    wildcard_constraints:
        provided=PROVIDED,


use rule rerank_radboud as rerank_radboud_provided with:
    input:
        run=pattern("trec_run", run="{provided}"),
        scores=pattern("radboud_joined_on"),
    output:
        pattern("trec_run", run="radboud.{variant}.g{point}.{ranking}.on-{provided}"),
    log:
        pattern("log", stage="aggregate", name="{collection}.radboud.{variant}.g{point}.{ranking}.on-{provided}"),
    benchmark:
        pattern("benchmark", stage="aggregate", name="{collection}.radboud.{variant}.g{point}.{ranking}.on-{provided}")
    wildcard_constraints:
        provided=PROVIDED,


if RADBOUD.split_table():

    rule radboud_split:
        """The gap between the thesis' baseline and ours, split into first stage and reranker (reranker/report/gap_split.py)."""
        input:
            numbers=PATH("numbers", table=RADBOUD.split_table()),
            sources=SOURCE_NUMBERS,
        output:
            RADBOUD.split_numbers(),
        log:
            PATH("log", stage="tables", name="radboud_split"),
        benchmark:
            PATH("benchmark", stage="tables", name="radboud_split")
        conda:
            ENV
        params:
            rows=" ".join(f"--{role.replace('_', '-')} {shlex.quote(row)}" for role, row in RADBOUD.split_rows().items()),
            measures=" ".join(RADBOUD.split_measures()),
            command=CFG["run_command"] + " radboud",
        shell:
            "python -m reranker tables split --numbers {input.numbers} --sources {input.sources} {params.rows}"
            " --measures {params.measures} --out {output} --command {params.command:q} > {log}"
