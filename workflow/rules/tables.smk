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
        # Rows are collections, column groups the two first stages; a provided run sits under BM25+RM3.
        specs=" ".join(shlex.quote(spec) for spec in
            [f"{RUN_LABELS[m]}:{SLUG_TO_ID[s]}:{WORK}/eval/{s}/{m}.json" for s in BASELINE_SLUGS for m in BASE_RUNS]
            + [f"{RUN_LABELS['bm25_rm3']}:{SLUG_TO_ID[s]} (provided run):{WORK}/eval/{s}/provided.json" for s in PROVIDED_SLUGS]
        ),
        caption=(
            f"Lucene baselines (pyserini), depth {CFG['retrieval']['depth']}: "
            f"BM25 (k1={CFG['retrieval']['models']['bm25']['k1']}, b={CFG['retrieval']['models']['bm25']['b']}) "
            f"and BM25+RM3 (fb_terms={CFG['retrieval']['models']['bm25_rm3']['fb_terms']}, "
            f"fb_docs={CFG['retrieval']['models']['bm25_rm3']['fb_docs']}, "
            f"original_query_weight={CFG['retrieval']['models']['bm25_rm3']['original_query_weight']})"
        ),
        measures=" ".join(MEASURES),
        note="AP is AP@1000 (trec_eval -M1000 map). A provided run is evaluated as it is (robust04: Birch's own 5-fold BM25+RM3 run).",
        out=f"{RESULTS}/tables/baselines",
    shell:
        "{PY} -m reranker tables results --eval {params.specs} --measures {params.measures} --row-header Collection --no-bold"
        " --caption {params.caption:q} --out {params.out} --numbers {output.numbers}"
        " --note {params.note:q}"
        " --command {RUN_COMMAND:q} > /dev/null"


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
        " --out {params.out} --numbers {output.numbers} --command {RUN_COMMAND:q} > /dev/null"


METHOD_LABELS = {"firstp": "FirstP", "maxp": "MaxP", "sump": "SumP", "meanp": "MeanP"}


def birch_rows():
    """(row label, run name, checkpoint) of the main table, in order."""
    rows = [(RUN_LABELS[FIRST_STAGE], FIRST_STAGE, None)]
    for name in BIRCH_CHECKPOINTS:
        rows += [(f"{checkpoint_label(name)} {n}S", f"birch.{name}.{n}S", name) for n in TOP_N]
    if PASSAGE_CHECKPOINT:
        for unit in UNITS:
            rows += [(f"{METHOD_LABELS[m]} over {unit}, {checkpoint_label(PASSAGE_CHECKPOINT)}",
                      f"{m}.{PASSAGE_CHECKPOINT}.{unit}", PASSAGE_CHECKPOINT) for m in AGGREGATION]
    if "maxp" in AGGREGATION:  # every other checkpoint's sentence evidence on its own, too
        rows += [(f"MaxP over sentences, {checkpoint_label(name)}", f"maxp.{name}.sentences", name)
                 for name in BIRCH_CHECKPOINTS if name != PASSAGE_CHECKPOINT]
    return rows


def birch_cells():
    """(collection slug, row label, run name) for every cell that exists: no checkpoint on its own training data."""
    return [(s, label, run) for s in TARGET_SLUGS for label, run, name in birch_rows()
            if name is None or applies_to(name, SLUG_TO_ID[s])]


def finetuned(names):
    return [c for c in names if checkpoint_entry(c)["source"] == "finetune"]


def birch_caption():
    fine_tuned = finetuned(BIRCH_CHECKPOINTS)
    models = "; ".join(f"{checkpoint_label(c)} = {hub_model(c)} fine-tuned on {' → '.join(training_chain(c))}"
                       for c in fine_tuned)
    references = [c for c in BIRCH_CHECKPOINTS if checkpoint_entry(c).get("head") == "bi_encoder"]
    training = dict(CFG.get("training", {}))
    reference_text = (f" Reference rows, not Birch's classifier: {', '.join(checkpoint_label(c) for c in references)}, "
                      f"the cosine of the mean-pooled query and sentence vectors as S_i in the same fusion."
                      if references else "")
    return (f"Birch on open collections, cross-domain (no checkpoint is trained on a collection it is evaluated on). "
            f"{RUN_LABELS[FIRST_STAGE]} top {K} documents reranked, the rest kept in order; sentences by pysbd, "
            f"max length {SEGMENT.get('max_length', 128)} tokens; {models}"
            f" (a classification head on the pooling the base was trained with; lr {training.get('learning_rate')}, "
            f"{training.get('negatives_per_positive')} BM25 negatives per positive, {training.get('epochs')} epochs, "
            f"max length {training.get('max_length')}, the step with the lowest held-out loss on "
            f"{training.get('validation_fraction', 0.1):.0%} of the training queries). a, w2, w3 chosen by 5-fold CV "
            f"on AP (folds in {RESULTS}/folds/).{reference_text}")


# Fine-tuned checkpoints behind any row of the main table (each gets a note and a loss curve).
TABLE_FINETUNED = finetuned(dict.fromkeys(BIRCH_CHECKPOINTS + [PASSAGE_CHECKPOINT] if PASSAGE_CHECKPOINT else BIRCH_CHECKPOINTS))


if TARGET_SLUGS:
    TABLES.append(f"{RESULTS}/tables/birch_main.md")

    rule birch_main_table:
        input:
            evals=lambda w: [f"{WORK}/eval/{s}/{run}.json" for s, _, run in birch_cells()],
            meta=lambda w: [f"{WORK}/scores/{s}/{c}/{FIRST_STAGE}.k{K}.sentences.tsv.meta.json"
                            for s in TARGET_SLUGS for c in BIRCH_CHECKPOINTS if applies_to(c, SLUG_TO_ID[s])],
            folds=[f"{WORK}/folds/{s}.json" for s in TARGET_SLUGS],
            checkpoints=[f"{WORK}/checkpoints/{c}/reranker.json"
                         for c in TABLE_FINETUNED],
        output:
            md=f"{RESULTS}/tables/birch_main.md",
            csv=f"{RESULTS}/tables/birch_main.csv",
            tex=f"{RESULTS}/tables/birch_main.tex",
            figure=f"{RESULTS}/figures/birch_main_per_query_ap.png",
            numbers=f"{RESULTS}/numbers/birch_main.json",
            folds=[f"{RESULTS}/folds/{s}.json" for s in TARGET_SLUGS],
            curves=[f"{RESULTS}/figures/checkpoint_{c}_loss.png"
                    for c in TABLE_FINETUNED],
        params:
            specs=lambda w: " ".join(shlex.quote(f"{SLUG_TO_ID[s]}:{label}:{WORK}/eval/{s}/{run}.json") for s, label, run in birch_cells()),
            baseline=RUN_LABELS[FIRST_STAGE],
            caption=birch_caption(),
            measures=" ".join(MEASURES),
            out=f"{RESULTS}/tables/birch_main",
            fusion=f"{WORK}/fusion",
            checkpoints=lambda w, input: " ".join(shlex.quote(f"{checkpoint_label(Path(path).parent.name)}:{path}")
                                                  for path in input.checkpoints),
            copy_curves=lambda w, input, output: " && ".join(
                f"cp {Path(path).parent}/loss.png {curve}" for path, curve in zip(input.checkpoints, output.curves)) or "true",
        shell:
            "mkdir -p {RESULTS}/folds {RESULTS}/fusion && cp {input.folds} {RESULTS}/folds/"
            " && cp -r {params.fusion}/. {RESULTS}/fusion/ && {params.copy_curves}"
            " && {PY} -m reranker tables results --eval {params.specs} --baseline-row {params.baseline:q}"
            " --measures {params.measures} --caption {params.caption:q} --formats md csv tex"
            " --figure {output.figure} --meta {input.meta} --checkpoints {params.checkpoints}"
            " --out {params.out} --numbers {output.numbers}"
            " --command {RUN_COMMAND:q} > /dev/null"
