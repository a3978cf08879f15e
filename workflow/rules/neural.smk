# Birch's neural half: segment the first-stage top-K, fine-tune (or fetch) checkpoints, score every
# (query, unit), fuse with cross-validation, and the aggregation baselines.


rule segment:
    """Sentences (pysbd) or fixed word passages of the first stage's top-K documents."""
    input:
        docs=P("docs"),
        run=P("trec_run", run=FIRST),
        topics=P("topics"),
    output:
        P("segments", first_stage=FIRST, k=K),
    log:
        P("log", stage="segment", name="{collection}.{unit}"),
    benchmark:
        P("benchmark", stage="segment", name="{collection}.{unit}")
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=settings("segment"),
    shell:
        "python -m reranker segment --config {params.config} --docs {input.docs} --run {input.run}"
        " --topics {input.topics} --unit {wildcards.unit} --out {output} 2> {log}"


rule train:
    """Fine-tune a relevance classifier on its `train_on` collections (in turn, or mixed)."""
    input:
        lambda w: EXP.training_inputs(w.checkpoint),
    output:
        P("checkpoint_meta"),
    log:
        P("log", stage="train", name="{checkpoint}"),
    benchmark:
        P("benchmark", stage="train", name="{checkpoint}")
    priority: lambda w: EXP.train_priority(w.checkpoint)
    conda:
        ENV
    threads: lambda w: EXP.job_threads(w.checkpoint)
    resources:
        gpu=CFG["training"]["gpus"],
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("train", checkpoint=w.checkpoint),
        models=lambda w: EXP.model_flags(w.checkpoint),
        sources=lambda w: " ".join(
            f"--source {cid}:{p['docs']}:{p['topics']}:{p['qrels']}:{p['run']}" for cid, p in EXP.training_sources(w.checkpoint)
        ),
        out=lambda w, output: os.path.dirname(output[0]),
        folds=lambda w: f"--folds {EXP.fold_file(w.checkpoint)}" if EXP.checkpoint(w.checkpoint).get("train_fold") else "",
    shell:
        "python -m reranker train --config {params.config} --checkpoint {wildcards.checkpoint} {params.models} {params.sources}"
        " {params.folds} --threads {threads} --out {params.out} 2> {log}"


SCORE_PARTS = CFG["score"]["parts"]
SCORE_THREADS = CFG["score"]["threads"] or THREADS
SCORE_OUT = P("scores_part", first_stage=FIRST, k=K) if SCORE_PARTS > 1 else P("scores", first_stage=FIRST, k=K)
SCORE_LOG = "{collection}.{checkpoint}.{unit}" if SCORE_PARTS == 1 else "{collection}.{checkpoint}.{unit}.part{part}"


rule score:
    """Score every (query, unit) of the top-K documents; cached by content, resumable by shard.

    With score.parts = N > 1, one job per block of shards ({part} = I-of-N), gathered by gather_scores."""
    input:
        checkpoint=lambda w: EXP.checkpoint_files(w.checkpoint),
        segments=P("segments", first_stage=FIRST, k=K),
        run=P("trec_run", run=FIRST),
        topics=P("topics"),
        qrels=P("qrels"),
    output:
        scores=SCORE_OUT,
        meta=f"{SCORE_OUT}.meta.json",
    log:
        P("log", stage="score", name=SCORE_LOG),
    benchmark:
        P("benchmark", stage="score", name=SCORE_LOG)
    priority: job_priority(SCORE_THREADS, SCORE_PRIORITY)
    conda:
        ENV
    threads: SCORE_THREADS
    resources:
        gpu=CFG["score"]["gpus"],
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("score", checkpoint=w.checkpoint),
        model=lambda w: EXP.checkpoint_ref(w.checkpoint),
        cache=CACHE,
        part=lambda w: w.get("part", "1-of-1").replace("-of-", "/"),
    shell:
        "python -m reranker score --config {params.config} --checkpoint {wildcards.checkpoint} --model {params.model:q}"
        " --cache {params.cache:q} --segments {input.segments} --run {input.run} --topics {input.topics} --qrels {input.qrels}"
        " --part {params.part} --threads {threads} --out {output.scores} 2> {log}"


if SCORE_PARTS > 1:

    rule gather_scores:
        """The score parts of one (collection, checkpoint), joined in order: the bytes of an unsharded run."""
        input:
            expand(
                P("scores_part", first_stage=FIRST, k=K),
                part=[f"{i}-of-{SCORE_PARTS}" for i in range(1, SCORE_PARTS + 1)],
                allow_missing=True,
            ),
        output:
            scores=P("scores", first_stage=FIRST, k=K),
            meta=P("scores_meta", first_stage=FIRST, k=K),
        log:
            P("log", stage="score", name="{collection}.{checkpoint}.{unit}.gather"),
        benchmark:
            P("benchmark", stage="score", name="{collection}.{checkpoint}.{unit}.gather")
        conda:
            ENV
        shell:
            "python -m reranker score gather --parts {input} --out {output.scores} 2> {log}"


rule fuse_birch:
    """Birch: a*S_doc + (1-a)*sum w_i S_i over the top n sentences; a, w by k-fold CV on AP. Beside the run, its
    evidence: the sentences behind every fused score (docs/evidence.md)."""
    input:
        run=P("trec_run", run=FIRST),
        scores=P("scores", first_stage=FIRST, k=K, unit="sentences"),
        qrels=P("qrels"),
        folds=P("work_folds"),
        segments=P("segments", first_stage=FIRST, k=K, unit="sentences"),
        docs=P("docs"),
    output:
        run=P("trec_run", run="birch.{checkpoint}.{n}S"),
        params=P("fusion_params"),
        evidence=P("evidence", run="birch.{checkpoint}.{n}S"),
    log:
        P("log", stage="fuse", name="{collection}.{checkpoint}.{n}S"),
    benchmark:
        P("benchmark", stage="fuse", name="{collection}.{checkpoint}.{n}S")
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=lambda w: settings("fuse", collection=w.collection),
        id=collection_id,
    shell:
        "python -m reranker fuse birch --config {params.config} --collection {params.id} --run {input.run}"
        " --scores {input.scores} --qrels {input.qrels} --folds {input.folds} --top-n {wildcards.n}"
        " --segments {input.segments} --docs {input.docs} --evidence-out {output.evidence}"
        " --out {output.run} --params-out {output.params} 2> {log}"


rule aggregate:
    """FirstP / MaxP / SumP / MeanP of unit scores, no first-stage interpolation."""
    input:
        run=P("trec_run", run=FIRST),
        scores=P("scores", first_stage=FIRST, k=K),
    output:
        P("trec_run", run="{method}.{checkpoint}.{unit}"),
    log:
        P("log", stage="aggregate", name="{collection}.{method}.{checkpoint}.{unit}"),
    benchmark:
        P("benchmark", stage="aggregate", name="{collection}.{method}.{checkpoint}.{unit}")
    conda:
        ENV
    shell:
        "python -m reranker fuse aggregate --method {wildcards.method} --run {input.run}" " --scores {input.scores} --out {output} 2> {log}"
