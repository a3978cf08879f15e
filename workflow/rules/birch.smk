# Birch (Akkalyoncu Yilmaz et al., EMNLP 2019), its main table: the first stage, each checkpoint's fused
# rows and the aggregation rows on every target; its notes, loss curves and chosen fusion weights.
# The stages before it (segment, train, score, fuse) are shared: workflow/rules/neural.smk.
#   plugin: reranker/experiments/birch.py

BIRCH = EXP.plugins["birch"]


rule birch_main_table:
    """Birch's main table: first stage, fused rows per checkpoint, aggregation rows; notes and curves."""
    input:
        evals=spec_files("birch_main", "eval"),
        meta=BIRCH.score_metas(),
        folds=[PATH("work_folds", collection=s) for s in EXP.target_slugs],
        checkpoints=spec_files("birch_main", "checkpoints"),
        sources=SOURCE_NUMBERS,
        spec=PATH("table_spec", table="birch_main"),
    output:
        md=PATH("table", table="birch_main"),
        csv=PATH("table_stem", table="birch_main") + ".csv",
        html=table_report(PATH("table_stem", table="birch_main") + ".html", "Birch"),
        tex=PATH("table_stem", table="birch_main") + ".tex",
        figure=figure_report(PATH("figure", figure="birch_main_per_query_ap"), "Birch"),
        numbers=PATH("numbers", table="birch_main"),
        folds=[PATH("folds", collection=s) for s in EXP.target_slugs],
        curves=[figure_report(curve, "Birch") for curve in BIRCH.curves()],
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
        fusion_work=PATH("fusion_dir"),
        copy_curves=" && ".join(
            f"cp {PATH('checkpoint_dir', checkpoint=c)}/loss.png {curve}" for c, curve in zip(BIRCH.table_finetuned, BIRCH.curves())
        )
        or "true",
        folds_dir=lambda w, output: os.path.dirname(output.folds[0]),
    shell:
        "mkdir -p {params.folds_dir} {output.fusion} && cp {input.folds} {params.folds_dir}/"
        " && cp -r {params.fusion_work}/. {output.fusion}/ && {params.copy_curves}"
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
