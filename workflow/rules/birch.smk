# Birch (Akkalyoncu Yilmaz et al., EMNLP 2019): the first-stage top-K segmented and every (query, unit) scored
# with its checkpoints (trained by workflow/rules/training.smk; both jobs are its plugin's stage_jobs, written by
# workflow/rules/rerank.smk), fused with cross-validation, the aggregation baselines; its main table: the first
# stage, each checkpoint's fused rows and the aggregation rows on every target; its notes, loss curves, chosen
# fusion weights and evidence page.
#   plugin: reranker/experiments/birch.py; included when it is active (birch.targets)

BIRCH = EXP.plugins["birch"]
FIRST = BIRCH.first_stage  # the run it segments, scores and fuses
CANDIDATES = BIRCH.candidates
SCORE_PARTS = CFG["score"]["parts"]  # its segment and score jobs: BIRCH.stage_jobs (workflow/rules/rerank.smk)


if SCORE_PARTS > 1:

    rule gather_scores:
        """The score parts of one (collection, checkpoint), joined in order: the bytes of an unsharded run."""
        input:
            expand(
                pattern("scores_part", first_stage=FIRST, k=CANDIDATES),
                part=[f"{i}-of-{SCORE_PARTS}" for i in range(1, SCORE_PARTS + 1)],
                allow_missing=True,
            ),
        output:
            scores=pattern("scores", first_stage=FIRST, k=CANDIDATES),
            meta=pattern("scores_meta", first_stage=FIRST, k=CANDIDATES),
        log:
            pattern("log", stage="score", name="{collection}.{checkpoint}.{unit}.gather"),
        benchmark:
            pattern("benchmark", stage="score", name="{collection}.{checkpoint}.{unit}.gather")
        conda:
            ENV
        shell:
            "python -m reranker score gather --parts {input} --out {output.scores} 2> {log}"


rule fuse_birch:
    """Birch: a*S_doc + (1-a)*sum w_i S_i over the top n sentences; a, w by k-fold CV on AP. Beside the run, its
    evidence: the sentences behind every fused score (docs/evidence.md)."""
    input:
        run=pattern("trec_run", run=FIRST),
        scores=pattern("scores", first_stage=FIRST, k=CANDIDATES, unit="sentences"),
        qrels=pattern("qrels"),
        folds=pattern("work_folds"),
        segments=pattern("segments", first_stage=FIRST, k=CANDIDATES, unit="sentences"),
        docs=pattern("docs"),
    output:
        run=pattern("trec_run", run="birch.{checkpoint}.{n}S"),
        params=pattern("fusion_params"),
        evidence=pattern("evidence", run="birch.{checkpoint}.{n}S"),
    log:
        pattern("log", stage="fuse", name="{collection}.{checkpoint}.{n}S"),
    benchmark:
        pattern("benchmark", stage="fuse", name="{collection}.{checkpoint}.{n}S")
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("fuse", collection=w.collection, section="birch"),
        id=collection_id,
    shell:
        "python -m reranker fuse birch --config {params.config} --section birch --collection {params.id} --run {input.run}"
        " --scores {input.scores} --qrels {input.qrels} --folds {input.folds} --top-n {wildcards.n}"
        " --segments {input.segments} --docs {input.docs} --evidence-out {output.evidence}"
        " --out {output.run} --params-out {output.params} 2> {log}"


rule aggregate:
    """FirstP / MaxP / SumP / MeanP of unit scores, no first-stage interpolation."""
    input:
        run=pattern("trec_run", run=FIRST),
        scores=pattern("scores", first_stage=FIRST, k=CANDIDATES),
        segments=pattern("segments", first_stage=FIRST, k=CANDIDATES),  # the units scored: their meta is read
    output:
        pattern("trec_run", run="{method}.{checkpoint}.{unit}"),
    log:
        pattern("log", stage="aggregate", name="{collection}.{method}.{checkpoint}.{unit}"),
    benchmark:
        pattern("benchmark", stage="aggregate", name="{collection}.{method}.{checkpoint}.{unit}")
    conda:
        ENV
    shell:
        "python -m reranker fuse aggregate --method {wildcards.method} --run {input.run}" " --scores {input.scores} --out {output} 2> {log}"


rule birch_main_table:
    """Birch's main table: first stage, fused rows per checkpoint, aggregation rows; notes and curves."""
    input:
        evals=spec_files("birch_main", "eval"),
        meta=BIRCH.score_metas(),
        folds=[PATH("work_folds", collection=s) for s in BIRCH.target_slugs],
        checkpoints=spec_files("birch_main", "checkpoints"),
        sources=SOURCE_NUMBERS,
        spec=PATH("table_spec", table="birch_main"),
        fusion=BIRCH.fusion_params(),
    output:
        **table_files("birch_main", "Birch"),
        figure=figure_report(PATH("figure", figure="birch_main_per_query_ap"), "Birch"),
        folds=[PATH("folds", collection=s) for s in BIRCH.target_slugs],
        curves=[figure_report(curve, "Birch") for curve in BIRCH.copied_curves()],
        fusion=directory(PATH("fusion")),  # the chosen a, w per fold, copied beside the table
    log:
        PATH("log", stage="tables", name="birch_main"),
    benchmark:
        PATH("benchmark", stage="tables", name="birch_main")
    conda:
        ENV
    params:
        significance=SIGNIFICANCE,
        baseline=FIRST_STAGES[FIRST].label,
        caption=BIRCH.caption(),
        figure_caption=(
            f"Per-query AP differences of the best fused rows against {FIRST_STAGES[FIRST].label}; and each fine-tuned"
            " checkpoint's held-out loss against the label prior (checkpoint_*_loss.png)."
        ),
        measures=" ".join(CFG["measures"]),
        out=lambda w, output: output.md[: -len(".md")],
        command=CFG["run_command"],
        copy_curves=" && ".join(
            f"cp {PATH('checkpoint_dir', checkpoint=c)}/loss.png {curve}" for c, curve in zip(BIRCH.table_finetuned, BIRCH.copied_curves())
        )
        or "true",
        folds_dir=lambda w, output: os.path.dirname(output.folds[0]),
    shell:
        "mkdir -p {params.folds_dir} {output.fusion} && cp {input.folds} {params.folds_dir}/"
        " && for f in {input.fusion}; do c={output.fusion}/$(basename $(dirname $f)); mkdir -p $c && cp $f $c/; done"
        " && {params.copy_curves}"
        " && python -m reranker tables results --spec {input.spec} --baseline-row {params.baseline:q} {params.significance}"
        " --measures {params.measures} --caption {params.caption:q} --formats md csv tex html"
        " --figure {output.figure} --meta {input.meta} --sources {input.sources}"
        " --out {params.out} --numbers {output.numbers} --command {params.command:q} > {log}"


rule birch_evidence_moves:
    """The report's page of Birch's evidence: per collection, the documents that rose and fell most."""
    input:
        runs=[PATH("trec_run", collection=s, run=r) for s, r in BIRCH.evidence_runs()],
        evidence=[PATH("evidence", collection=s, run=r) for s, r in BIRCH.evidence_runs()],
        topics=[PATH("topics", collection=s) for s, _ in BIRCH.evidence_runs()],
    output:
        report(PATH("evidence_moves"), caption="../report/evidence.rst", category="Birch"),
    log:
        PATH("log", stage="tables", name="birch_evidence_moves"),
    benchmark:
        PATH("benchmark", stage="tables", name="birch_evidence_moves")
    conda:
        ENV
    params:
        runs=" ".join(
            f"--run {EXP.slug_to_id[s]}:{PATH('trec_run', collection=s, run=r)} --topics {EXP.slug_to_id[s]}:{PATH('topics', collection=s)}"
            for s, r in BIRCH.evidence_runs()
        ),
        caption=(
            "Birch's evidence: per collection, the documents of one fused run ("
            + ", ".join(sorted({r for _, r in BIRCH.evidence_runs()}))
            + ") that rose and fell most from the first stage, each with its top sentences and what each term added"
            " to its fused score (the evidence beside every fused run; `python -m reranker explain` shows any document)."
        ),
    shell:
        "python -m reranker explain moves {params.runs} --out {output} 2> {log}"
