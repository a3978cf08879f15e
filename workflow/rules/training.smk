# Fine-tuning, shared by every paper: a checkpoint of workflow/config/checkpoints.yaml, or one a paper's plugin
# generates (per fold, per row), trained on its `train_on` collections (reranker/neural, python -m reranker train).


rule train:
    """Fine-tune a relevance classifier on its `train_on` collections (in turn, or mixed)."""
    input:
        lambda w: EXP.training_inputs(w.checkpoint),
    output:
        pattern("checkpoint_meta"),
    log:
        pattern("log", stage="train", name="{checkpoint}"),
    benchmark:
        pattern("benchmark", stage="train", name="{checkpoint}")
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
