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
