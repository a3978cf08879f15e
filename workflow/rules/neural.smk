# Birch's neural half: segment the first-stage top-K, fine-tune (or fetch) checkpoints, score every
# (query, sentence), fuse with cross-validation, and the aggregation baselines.
BIRCH = CFG.get("birch", {})
TARGET_SLUGS = [slug(t) for t in BIRCH.get("targets", [])]
FIRST_STAGE = BIRCH.get("first_stage", "bm25_rm3")
SEGMENT = CFG.get("segment", {})
SCORE = CFG.get("score", {})
K = SEGMENT.get("candidates", 100)
BIRCH_CHECKPOINTS = BIRCH.get("checkpoints", [])
PASSAGE_CHECKPOINT = BIRCH.get("passage_checkpoint")
TOP_N = BIRCH.get("fusion", {}).get("top_n", [1, 2, 3])
AGGREGATION = BIRCH.get("aggregation", [])
UNITS = ["sentences"] + (["passages"] if PASSAGE_CHECKPOINT and AGGREGATION else [])
fail_fast_on_missing_files(BIRCH.get("targets", []))

wildcard_constraints:
    checkpoint="|".join(sorted(CFG["checkpoints"])) or "none",
    unit="sentences|passages",
    n="[1-3]",
    method="firstp|maxp|sump|meanp",


def checkpoint_entry(name):
    return CFG["checkpoints"][name]


def checkpoint_ref(name):
    """What `--checkpoint` gets: a fine-tuned directory, or a fetched id/directory."""
    entry = checkpoint_entry(name)
    return f"{WORK}/checkpoints/{name}" if entry["source"] == "finetune" else entry["model"]


def checkpoint_files(name):
    """Snakemake inputs a checkpoint needs: the fine-tuned directory's marker, or nothing for fetched ones."""
    entry = checkpoint_entry(name)
    return [f"{WORK}/checkpoints/{name}/reranker.json"] if entry["source"] == "finetune" else []


def hub_model(name):
    """The Hugging Face id (or directory) at the root of a checkpoint's lineage."""
    entry = checkpoint_entry(name)
    return entry["model"] if entry["source"] == "hf" else hub_model(entry["base"])


def training_chain(name):
    """The collections a checkpoint was fine-tuned on, in order, through its fine-tuned bases."""
    entry = checkpoint_entry(name)
    if entry["source"] != "finetune":
        return []
    return training_chain(entry["base"]) + list(entry["train_on"])


def applies_to(name, collection_id):
    """Cross-domain as in the paper: a checkpoint never scores a collection it was trained on."""
    return collection_id not in training_chain(name)


def checkpoint_label(name):
    return checkpoint_entry(name).get("label", name)


def hf_flags(name):
    entry = checkpoint_entry(name)
    if entry["source"] != "hf":
        return ""
    flags = f"--head {entry['head']}" if entry.get("head") else ""  # none: the model's own pooling
    if "relevant_index" in entry:
        flags += f" --relevant-index {entry['relevant_index']}"
    if entry.get("num_layers"):
        flags += f" --num-layers {entry['num_layers']}"
    return flags


def training_flags(name):
    settings = dict(CFG.get("training", {}))
    settings.update(checkpoint_entry(name).get("training", {}))
    base = checkpoint_entry(checkpoint_entry(name)["base"])
    if base["source"] == "hf":  # a fetched base: its declared head and layer slice
        settings["head"] = settings.get("head") or base.get("head")
        settings["num_layers"] = settings.get("num_layers") or base.get("num_layers")
    flag = {"learning_rate": "--lr", "epochs": "--epochs", "batch_size": "--batch-size",
            "max_length": "--max-length", "warmup": "--warmup", "weight_decay": "--weight-decay",
            "seed": "--seed", "negatives_per_positive": "--negatives", "negatives_depth": "--negatives-depth",
            "max_pairs": "--max-pairs", "device": "--device", "num_layers": "--num-layers", "head": "--head",
            "precision": "--precision", "validation_fraction": "--validation-fraction",
            "eval_every": "--eval-every", "select": "--select", "patience": "--patience"}
    flags = [f"{flag[key]} {value}" for key, value in settings.items() if value is not None and key in flag]
    if settings.get("bucketed") is False:
        flags.append("--no-bucketing")
    if checkpoint_entry(name).get("mix"):
        flags.append("--mix")
    return " ".join(flags)


rule folds:
    """The collection's own 5 folds where it has them (Cranfield, Robust04), else a seeded split."""
    output:
        f"{WORK}/folds/{{collection}}.json",
    params:
        id=lambda w: SLUG_TO_ID[w.collection],
        k=BIRCH.get("folds", {}).get("k", 5),
        seed=BIRCH.get("folds", {}).get("seed", 42),
    shell:
        "{PY} -m reranker collections folds --collection {params.id} --config {RESOLVED_CONFIG}"
        " --k {params.k} --seed {params.seed} --out {output}"


rule segment:
    """Sentences (pysbd) or fixed word passages of the first stage's top-K documents."""
    input:
        docs=f"{WORK}/collections/{{collection}}/docs.jsonl",
        run=f"{WORK}/runs/{{collection}}/{FIRST_STAGE}.run",
        topics=f"{WORK}/collections/{{collection}}/topics.tsv",
    output:
        f"{WORK}/segments/{{collection}}/{FIRST_STAGE}.k{K}.{{unit}}.jsonl",
    params:
        tokenizer=hub_model(BIRCH_CHECKPOINTS[0]) if BIRCH_CHECKPOINTS else "",
        max_length=SEGMENT.get("max_length", 128),
        length=SEGMENT.get("passages", {}).get("length", 150),
        stride=SEGMENT.get("passages", {}).get("stride", 100),
        title="" if SEGMENT.get("passages", {}).get("title", True) else "--no-title",
    log:
        f"{WORK}/logs/segment/{{collection}}.{{unit}}.log",
    shell:
        "{PY} -m reranker segment --docs {input.docs} --run {input.run} --topics {input.topics}"
        " --candidates {K} --unit {wildcards.unit} --tokenizer {params.tokenizer}"
        " --max-length {params.max_length} --passage-length {params.length} --passage-stride {params.stride}"
        " {params.title} --out {output} 2> {log}"


rule train:
    """Fine-tune a relevance classifier on each `train_on` collection in turn (chained)."""
    input:
        base=lambda w: checkpoint_files(checkpoint_entry(w.checkpoint)["base"]),
        sources=lambda w: [
            f"{WORK}/{kind}/{slug(s)}/{name}"
            for s in checkpoint_entry(w.checkpoint)["train_on"]
            for kind, name in (("collections", "docs.jsonl"), ("collections", "topics.tsv"),
                               ("collections", "qrels.txt"), ("runs", "bm25.run"))
        ],
    output:
        f"{WORK}/checkpoints/{{checkpoint}}/reranker.json",
    params:
        base=lambda w: checkpoint_ref(checkpoint_entry(w.checkpoint)["base"]),
        sources=lambda w: " ".join(
            f"--source {s}:{WORK}/collections/{slug(s)}/docs.jsonl:{WORK}/collections/{slug(s)}/topics.tsv"
            f":{WORK}/collections/{slug(s)}/qrels.txt:{WORK}/runs/{slug(s)}/bm25.run"
            for s in checkpoint_entry(w.checkpoint)["train_on"]
        ),
        flags=lambda w: training_flags(w.checkpoint),
        out=lambda w: f"{WORK}/checkpoints/{w.checkpoint}",
    priority: 10  # the longest job on the critical path: start it as soon as its inputs exist
    threads: THREADS
    log:
        f"{WORK}/logs/train/{{checkpoint}}.log",
    shell:
        "{PY} -m reranker train --base {params.base} {params.sources} {params.flags} --threads {threads}"
        " --out {params.out} 2> {log}"


rule score:
    """Score every (query, unit) of the top-K documents; cached by content, resumable by shard."""
    input:
        checkpoint=lambda w: checkpoint_files(w.checkpoint),
        segments=f"{WORK}/segments/{{collection}}/{FIRST_STAGE}.k{K}.{{unit}}.jsonl",
        run=f"{WORK}/runs/{{collection}}/{FIRST_STAGE}.run",
        topics=f"{WORK}/collections/{{collection}}/topics.tsv",
        qrels=f"{WORK}/collections/{{collection}}/qrels.txt",
    output:
        scores=f"{WORK}/scores/{{collection}}/{{checkpoint}}/{FIRST_STAGE}.k{K}.{{unit}}.tsv",
        meta=f"{WORK}/scores/{{collection}}/{{checkpoint}}/{FIRST_STAGE}.k{K}.{{unit}}.tsv.meta.json",
    params:
        ref=lambda w: checkpoint_ref(w.checkpoint),
        hf=lambda w: hf_flags(w.checkpoint),
        kind=lambda w: "cosine" if checkpoint_entry(w.checkpoint).get("head") == "bi_encoder" else SCORE.get("kind", "logit"),
        batch=SCORE.get("batch_size", 64),
        precision=SCORE.get("precision", "exact"),
        device=SCORE.get("device", "auto"),
    threads: THREADS
    log:
        f"{WORK}/logs/score/{{collection}}.{{checkpoint}}.{{unit}}.log",
    shell:
        "{PY} -m reranker score --checkpoint {params.ref} {params.hf} --segments {input.segments}"
        " --run {input.run} --topics {input.topics} --qrels {input.qrels} --candidates {K} --kind {params.kind}"
        " --batch-size {params.batch} --precision {params.precision} --device {params.device}"
        " --cache {WORK}/cache/scores --out {output.scores} 2> {log}"


rule fuse_birch:
    """Birch: a*S_doc + (1-a)*sum w_i S_i over the top n sentences; a, w by 5-fold CV on AP."""
    input:
        run=f"{WORK}/runs/{{collection}}/{FIRST_STAGE}.run",
        scores=f"{WORK}/scores/{{collection}}/{{checkpoint}}/{FIRST_STAGE}.k{K}.sentences.tsv",
        qrels=f"{WORK}/collections/{{collection}}/qrels.txt",
        folds=f"{WORK}/folds/{{collection}}.json",
    output:
        run=f"{WORK}/runs/{{collection}}/birch.{{checkpoint}}.{{n}}S.run",
        params=f"{WORK}/fusion/{{collection}}/birch.{{checkpoint}}.{{n}}S.json",
    params:
        alpha_step=BIRCH.get("fusion", {}).get("alpha_step", 0.1),
        weight_step=BIRCH.get("fusion", {}).get("weight_step", 0.1),
        normalise=BIRCH.get("fusion", {}).get("normalise", "none"),
        min_grade=lambda w: collection_entry(w.collection).get("relevant_min_grade", 1),
    log:
        f"{WORK}/logs/fuse/{{collection}}.{{checkpoint}}.{{n}}S.log",
    shell:
        "{PY} -m reranker fuse birch --run {input.run} --scores {input.scores} --qrels {input.qrels}"
        " --folds {input.folds} --top-n {wildcards.n} --alpha-step {params.alpha_step}"
        " --weight-step {params.weight_step} --normalise {params.normalise} --relevant-min-grade {params.min_grade}"
        " --out {output.run} --params-out {output.params} 2> {log}"


rule aggregate:
    """FirstP / MaxP / SumP / MeanP of unit scores, no first-stage interpolation."""
    input:
        run=f"{WORK}/runs/{{collection}}/{FIRST_STAGE}.run",
        scores=f"{WORK}/scores/{{collection}}/{{checkpoint}}/{FIRST_STAGE}.k{K}.{{unit}}.tsv",
    output:
        f"{WORK}/runs/{{collection}}/{{method}}.{{checkpoint}}.{{unit}}.run",
    shell:
        "{PY} -m reranker fuse aggregate --method {wildcards.method} --run {input.run}"
        " --scores {input.scores} --out {output}"
