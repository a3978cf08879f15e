# Steensland (2021), the NTNU thesis: titled passages of the first stage's top R scored by BERT,
# aggregated per document (Max, Mean), with fine-tuning choices, model size and distillation as rows.
#   snakemake --cores all ntnu

#   plugin: reranker/experiments/ntnu.py (rows, captions, checkpoints, its segment, score and table jobs); included when it is active

from reranker.experiments.ntnu import ntnu_checkpoint

NTNU = EXP.plugins["ntnu"]
NTNU_CFG = CFG["ntnu"]
NT_FIRST = NTNU_CFG["first_stage"]


wildcard_constraints:
    ntnu_model=wildcard_pattern(NTNU_CFG["models"]),
    aggregation=wildcard_pattern(AGGREGATORS),
    r="[0-9]+",


rule rerank_ntnu:
    """Documents ordered by an aggregation of their passages' scores; the rest keep the first stage's order."""
    input:
        run=pattern("trec_run", run=NT_FIRST),
        scores=lambda w: PATH(
            "ntnu_scores",
            collection=w.collection,
            first_stage=NT_FIRST,
            k=NTNU_CFG["candidates"],
            checkpoint=ntnu_checkpoint(w.ntnu_model),
        ),
        segments=pattern("ntnu_segments", first_stage=NT_FIRST, k=NTNU.depth),  # the passages scored: their meta is read
    output:
        pattern("trec_run", run="ntnu.{ntnu_model}.{aggregation}"),
    log:
        pattern("log", stage="aggregate", name="{collection}.ntnu.{ntnu_model}.{aggregation}"),
    benchmark:
        pattern("benchmark", stage="aggregate", name="{collection}.ntnu.{ntnu_model}.{aggregation}")
    conda:
        ENV
    shell:
        "python -m reranker fuse aggregate --method {wildcards.aggregation} --run {input.run} --scores {input.scores}"
        " --out {output} 2> {log}"


rule rerank_ntnu_sweep:
    """Figure 5.4: the top R reranked, R out of one scoring at the deepest R."""
    input:
        run=pattern("trec_run", run=NT_FIRST),
        scores=lambda w: PATH(
            "ntnu_scores", collection=w.collection, first_stage=NT_FIRST, k=NTNU.depth, checkpoint=ntnu_checkpoint(w.ntnu_model)
        ),
        segments=pattern("ntnu_segments", first_stage=NT_FIRST, k=NTNU.depth),  # the passages scored: their meta is read
    output:
        pattern("trec_run", run="ntnu.{ntnu_model}.{aggregation}.r{r}"),
    log:
        pattern("log", stage="aggregate", name="{collection}.ntnu.{ntnu_model}.{aggregation}.r{r}"),
    benchmark:
        pattern("benchmark", stage="aggregate", name="{collection}.ntnu.{ntnu_model}.{aggregation}.r{r}")
    conda:
        ENV
    shell:
        "python -m reranker fuse aggregate --method {wildcards.aggregation} --candidates {wildcards.r}"
        " --run {input.run} --scores {input.scores} --out {output} 2> {log}"


rule ntnu_speed:
    """Queries per minute: the first stage alone, or with passage splitting and one model's scoring."""
    input:
        unpack(lambda w: NTNU.speed_stages(w.system)),
        topics=pattern("topics"),
    output:
        pattern("ntnu_speed"),
    log:
        pattern("log", stage="speed", name="{collection}.{system}"),
    benchmark:
        pattern("benchmark", stage="speed", name="{collection}.{system}")
    conda:
        ENV
    params:
        stages=lambda w, input: " ".join(f"--stage {name}:{path}" for name, path in input.items() if name != "topics"),
    shell:
        "python -m reranker speed {params.stages} --topics {input.topics} --out {output} 2> {log}"


if NTNU_CFG["sweep_figure"]:

    rule ntnu_candidates_figure:
        """Figure 5.4: the measures against R, the reference model's aggregations and the first stage."""
        input:
            spec_files("ntnu_candidates"),
            spec=PATH("table_spec", table="ntnu_candidates"),
        output:
            figure=figure_report(PATH("figure", figure="ntnu_candidates"), "NTNU"),
            numbers=PATH("figure", figure="ntnu_candidates").removesuffix(".png") + ".json",  # its points, for the index
        log:
            PATH("log", stage="figures", name="ntnu_candidates"),
        benchmark:
            PATH("benchmark", stage="figures", name="ntnu_candidates")
        conda:
            ENV
        params:
            figure_caption="Figure 5.4 (Steensland 2021): MRR@10 and R@10 against the number of candidates R reranked.",
            measures=" ".join(NTNU_CFG["measures"]),
        shell:
            "python -m reranker tables figure sweep --spec {input.spec} --measures {params.measures} --xlabel R"
            " --out {output.figure} --numbers {output.numbers} > {log}"
