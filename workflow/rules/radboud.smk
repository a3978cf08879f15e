# Verbrugge (2021), the Radboud thesis: the first stage's top candidates reranked by BERT classifiers
# trained per fold, with training strategies as rows (enrich, MLM/NSP transfer, label heads, regression).
#   snakemake --cores all radboud

#   plugin: reranker/experiments/radboud.py (rows, captions, checkpoints); included when it is active

RADBOUD = EXP.plugins["radboud"]
RADBOUD_CFG = CFG["radboud"]
RADBOUD_SCORE = score_job("radboud")  # threads, priority, GPUs and params of its score job (common.smk)
PROVIDED = wildcard_pattern(RADBOUD_CFG["provided_candidates"])  # the collection's own runs that the baseline reranks too

for provided in RADBOUD_CFG["provided_candidates"]:  # name a missing run, and where it goes, before any job starts
    EXP.loaded(RADBOUD_CFG["collection"]).check_run(provided, DATA.made_by_rules())


wildcard_constraints:
    variant=wildcard_pattern(RADBOUD_CFG["variants"]),
    ranking=wildcard_pattern(RANKINGS),
    point="[0-9]+",


rule segment_documents:
    """The first stage's top candidates as whole documents (title + text), one unit each."""
    input:
        docs=pattern("docs"),
        run=pattern("trec_run", run=RADBOUD_CFG["first_stage"]),
        topics=pattern("topics"),
    output:
        pattern("segments", first_stage=RADBOUD_CFG["first_stage"], k=RADBOUD_CFG["candidates"], unit="documents"),
    log:
        pattern("log", stage="segment", name="{collection}.documents"),
    benchmark:
        pattern("benchmark", stage="segment", name="{collection}.documents")
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=settings("segment", section="radboud"),
    shell:
        "python -m reranker segment --config {params.config} --section radboud --docs {input.docs}"
        " --run {input.run} --topics {input.topics} --unit documents --out {output} 2> {log}"


rule score_radboud:
    """A per-fold checkpoint scores its fold's test queries' candidates, read by one ranking."""
    input:
        checkpoint=lambda w: EXP.checkpoint_files(w.checkpoint),
        segments=pattern("segments", unit="documents"),
        run=pattern("trec_run", run="{first_stage}"),
        topics=pattern("topics"),
        folds=pattern("work_folds"),
    output:
        pattern("radboud_scores"),
    log:
        pattern("log", stage="score", name="{collection}.{checkpoint}.{first_stage}.k{k}.{ranking}"),
    benchmark:
        pattern("benchmark", stage="score", name="{collection}.{checkpoint}.{first_stage}.k{k}.{ranking}")
    priority: RADBOUD_SCORE.priority
    conda:
        ENV
    threads: RADBOUD_SCORE.threads
    resources:
        gpu=RADBOUD_SCORE.gpus,
    params:
        **RADBOUD_SCORE.params,
        cache=CACHE,
    shell:
        "python -m reranker score --config {params.config} --section radboud --checkpoint {wildcards.checkpoint}"
        " --model {params.model:q} --cache {params.cache:q}"
        " --ranking {wildcards.ranking} --folds {input.folds} --segments {input.segments} --run {input.run}"
        " --topics {input.topics} --threads {threads} --out {output} 2> {log}"


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


for rb_table in RADBOUD.ranking_tables():

    rule:
        name:
            f"radboud_table_{rb_table}"
        input:
            evals=spec_files(rb_table, "eval"),
            checkpoints=spec_files(rb_table, "checkpoints"),
            values=spec_files(rb_table, "value"),
            sources=SOURCE_NUMBERS,
            spec=PATH("table_spec", table=rb_table),
        output:
            **table_files(rb_table, "Radboud"),
        log:
            PATH("log", stage="tables", name=rb_table),
        benchmark:
            PATH("benchmark", stage="tables", name=rb_table)
        conda:
            ENV
        params:
            significance=SIGNIFICANCE,
            baseline=FIRST_STAGES[RADBOUD_CFG["first_stage"]].label,
            second=RADBOUD.baseline_row(rb_table) or "",
            measures=" ".join(RADBOUD_CFG["measures"]),
            caption=RADBOUD.caption(rb_table),
            out=lambda w, output: output.md[: -len(".md")],
            command=CFG["run_command"] + " radboud",
        shell:
            "python -m reranker tables results --spec {input.spec} --baseline-row {params.baseline:q} {params.significance}"
            " --second-baseline-row {params.second:q} --measures {params.measures} --row-header Reranker"
            " --caption {params.caption:q} --formats md csv tex html --sources {input.sources}"
            " --out {params.out} --numbers {output.numbers} --command {params.command:q} > {log}"


for rb_table in RADBOUD.pretraining_tables():

    rule:
        name:
            f"radboud_table_{rb_table}"
        input:
            metas=spec_files(rb_table, "checkpoints"),
            sources=SOURCE_NUMBERS,
            spec=PATH("table_spec", table=rb_table),
        output:
            **table_files(rb_table, "Radboud"),
        log:
            PATH("log", stage="tables", name=rb_table),
        benchmark:
            PATH("benchmark", stage="tables", name=rb_table)
        conda:
            ENV
        params:
            caption=RADBOUD_CFG["tables"][rb_table],
            out=lambda w, output: output.md[: -len(".md")],
            command=CFG["run_command"] + " radboud",
        shell:
            "python -m reranker tables pretraining --spec {input.spec} --caption {params.caption:q}"
            " --formats md csv tex html --out {params.out} --numbers {output.numbers} --command {params.command:q}"
            " --sources {input.sources} > {log}"
