# Every table of the configuration, written under the run folder, then compared with the reference.
from snakemake.io import is_flagged

from reranker.formats import captions
from reranker.formats.table_spec import write_spec
from reranker.reproduction import reference

# Ours, then each paper's own (reranker/experiments: the registry of the papers this configuration asks for).
TABLES = [PATH("table", table="baselines"), PATH("table", table="dataset_stats")]
TABLES += [output for plugin in EXP.plugins.values() for output in plugin.outputs()]
STATS_NOTE = (
    "Judged queries have at least one qrels line; relevant = grade >= the collection relevant_min_grade"
    " (default 1); doc length counts title + text words."
)
BASELINES_NOTE = (
    "AP is AP@1000 (trec_eval -M1000 map). A provided run is evaluated as it is" " (robust04: Birch's own 5-fold BM25+RM3 run)."
)
# What the comparison reads: every table and figure, or those of the configured part (`parts`, `part`; the run
# against the originals' own runs is published too, so a part may make it).
REPRODUCTION = [PATH("run_reproduction", pair=pair) for pair in CFG["reproduction"]]
TARGETS = EXP.part_targets(TABLES + REPRODUCTION) if CFG["part"] else TABLES
# Every table's cells (labels and the files they come from), by table name: ours and each paper's plugin's.
TABLE_SPECS = EXP.specs
# Every paper's figures drawn by `tables figure` (its loss curves, NTNU's tables' figures), one rule each, in the
# report under its plugin's class name.
for figure_plugin in EXP.plugins.values():
    for figure, job in figure_plugin.figure_jobs().items():

        rule:
            name:
                job.rule
            input:
                job.inputs,
            output:
                figure_report(PATH("figure", figure=figure), type(figure_plugin).__name__),
            log:
                PATH("log", stage="figures", name=figure),
            benchmark:
                PATH("benchmark", stage="figures", name=figure)
            conda:
                ENV
            params:
                **job.params,
                args=job.args,
                figure_caption=job.caption,
            shell:
                "python -m reranker tables figure {params.args} --out {output} > {log}"


# Every paper's tables written by its command of `tables` (its plugin's table_jobs), one rule each, in the report
# under its plugin's class name.
for table_plugin in EXP.plugins.values():
    for table, job in table_plugin.table_jobs().items():

        rule:
            name:
                job.rule
            input:
                **job.inputs,
                sources=SOURCE_NUMBERS,
                spec=PATH("table_spec", table=table),
            output:
                **table_files(table, type(table_plugin).__name__),
            log:
                PATH("log", stage="tables", name=table),
            benchmark:
                PATH("benchmark", stage="tables", name=table)
            conda:
                ENV
            params:
                **job.params,
                out=lambda w, output: output.md[: -len(".md")],
            shell:
                looped_shell(locals().get("rule"), f"python -m reranker tables {job.command} > {{log}}")


# The rules that draw figures: those whose params caption them (the report's caption, figure_report).
FIGURE_RULES = [rule_ for rule_ in workflow.rules if "figure_caption" in rule_.params.keys()]
# Every file they draw (each figure, and the points of one a claim reads): read by the seed index.
FIGURE_FILES = sorted({str(f) for rule_ in FIGURE_RULES for f in rule_.output})
# Every figure's caption, from the rule that draws it: stored beside the figures, since the report is rebuilt by
# every run and not kept (reranker/formats/captions.py). By file name, whatever order the rules are written in.
FIGURE_CAPTIONS = dict(
    sorted(
        (os.path.basename(str(figure)), rule_.params.figure_caption)
        for rule_ in FIGURE_RULES
        for figure in rule_.output
        if is_flagged(figure, "report") and str(figure).endswith(".png")
    )
)
# The seed index's own figure (rule seed_index, below: it reads every figure above, so it is not one of FIGURE_RULES).
FOREST = PATH("figure", figure="verdicts_forest")  # reranker.report.forest.FIGURE: the name the README gives it
FOREST_CAPTION = (
    "Every test of the run's index (README.md), one line each: the effect (mean per-query difference, ours - than) and"
    " its 95% paired-bootstrap interval, by work (each panel on its own scale) and claim (README.md's labels); colour:"
    " the verdict of the line the test belongs to; shaded: the claim's margin (±δ for near, 0 to δ for does not"
    " outperform); open diamond: a test that judges no claim (p uncorrected); the vertical line is zero."
)
FIGURE_CAPTIONS[os.path.basename(FOREST)] = FOREST_CAPTION


rule table_spec:
    """A table's cells as a spec file (reranker.formats.table_spec), which its rule hands `tables ... --spec`:
    labels and paths as records, never quoted into a command line. A change to them reruns it (params)."""
    output:
        pattern("table_spec"),
    log:
        PATH("log", stage="tables", name="{table}.spec"),
    benchmark:
        PATH("benchmark", stage="tables", name="{table}.spec")
    wildcard_constraints:
        table=wildcard_pattern(TABLE_SPECS),
    localrule: True
    params:
        spec=lambda w: TABLE_SPECS[w.table],
    run:
        write_spec(output[0], params.spec)


rule figure_captions:
    """The captions of the run's figures, by file name, beside them (the report's, kept where the report is not)."""
    output:
        PATH("figure_captions"),
    log:
        PATH("log", stage="figures", name="captions"),
    benchmark:
        PATH("benchmark", stage="figures", name="captions")
    localrule: True
    params:
        captions=FIGURE_CAPTIONS,
    run:
        captions.write(output[0], params.captions)


rule baselines_table:
    """The first stages on every baseline collection (+ provided runs, such as Birch's Robust04 run)."""
    input:
        spec_files("baselines"),
        sources=SOURCE_NUMBERS,
        spec=PATH("table_spec", table="baselines"),
    output:
        **table_files("baselines", "Collections", formats=("csv", "html")),
    log:
        PATH("log", stage="tables", name="baselines"),
    benchmark:
        PATH("benchmark", stage="tables", name="baselines")
    conda:
        ENV
    params:
        caption=EXP.baselines_caption(),
        measures=" ".join(CFG["measures"]),
        note=BASELINES_NOTE,
        out=lambda w, output: output.md[: -len(".md")],
        command=CFG["run_command"],
    shell:
        "python -m reranker tables results --spec {input.spec} --measures {params.measures}"
        " --row-header Collection --no-bold --caption {params.caption:q} --formats md csv html --out {params.out} --sources {input.sources}"
        " --numbers {output.numbers} --note {params.note:q} --command {params.command:q} > {log}"


rule dataset_stats_table:
    """Documents, queries, judgments and lengths of every baseline collection."""
    input:
        spec_files("dataset_stats"),
        spec=PATH("table_spec", table="dataset_stats"),
    output:
        **table_files("dataset_stats", "Collections", formats=("csv", "html")),
    log:
        PATH("log", stage="tables", name="dataset_stats"),
    benchmark:
        PATH("benchmark", stage="tables", name="dataset_stats")
    conda:
        ENV
    params:
        caption="Dataset statistics",
        note=STATS_NOTE,
        out=lambda w, output: output.md[: -len(".md")],
        command=CFG["run_command"],
    shell:
        "python -m reranker tables stats --spec {input.spec} --caption {params.caption:q}"
        " --note {params.note:q} --formats md csv html --out {params.out} --numbers {output.numbers}"
        " --command {params.command:q} > {log}"


rule compare:
    """Every number of this run against the stored reference, within the configured tolerances."""
    input:
        TARGETS,
        reference=reference.read_from(config["reference"]),
    output:
        PATH("comparison"),
    log:
        PATH("log", stage="compare", name="compare"),
    benchmark:
        PATH("benchmark", stage="compare", name="compare")
    conda:
        ENV
    params:
        config=CONFIG_FILE,
        settings=settings("compare"),
    shell:
        "python -m reranker compare --config {params.config} --out {output} 2> {log}"


rule resources_table:
    """What every stage cost: Snakemake's benchmark of every job and the stages' metas. Built last, after the
    comparison and the seed index (which reads only tables: built beside this, its benchmark could be missed, as it
    was once its bootstrap took seconds); `make run` rebuilds it with the run's measured wall clock once the run has
    ended."""
    input:
        PATH("comparison"),
        PATH("seed_index"),
        PATH("figure_captions"),
        [page for plugin in EXP.plugins.values() for page in plugin.pages()],  # their jobs are counted too
    output:
        **table_files("resources", "Resources", formats=("csv", "html")),
    log:
        PATH("log", stage="tables", name="resources"),
    benchmark:
        PATH("benchmark", stage="tables", name="resources")
    conda:
        ENV
    params:
        run_dir=lambda w, output: os.path.dirname(os.path.dirname(output.md)),  # tables/resources.md's run folder
        caption="What every stage cost",
        groups=" ".join(experiments.checkpoint_prefixes(EXP.plugins)),
        out=lambda w, output: output.md[: -len(".md")],
        command=CFG["run_command"],
    shell:
        "python -m reranker tables resources --run-dir {params.run_dir} --caption {params.caption:q} --checkpoint-groups {params.groups}"
        " --formats md csv html --out {params.out} --numbers {output.numbers} --command {params.command:q} > {log}"


rule seed_index:
    """The run's README: every table of the three source works, our files, the command, and whether the effect
    held, checked against the claims of `seed_tables` (workflow/config/seed_tables.yaml), one row per judged line,
    and the runs against the originals' own (run_reproduction); and the forest plot of every test it judges
    (figures/verdicts_forest.png, in the report and captions.json). After the comparison: every table is in."""
    input:
        comparison=PATH("comparison"),
        seeds=CFG["seed_tables"],
        sources=SOURCE_NUMBERS,
        reproduction=REPRODUCTION,  # read from the run folder
        tables=TABLES,  # each claim reads its table's numbers, made with it
        figures=FIGURE_FILES,  # and a figure's points (figure 5.4's sweep)
    output:
        index=PATH("seed_index"),
        forest=figure_report(FOREST, "Verdicts"),  # every test of the index, beside the figures it reads
    log:
        PATH("log", stage="tables", name="index"),
    benchmark:
        PATH("benchmark", stage="tables", name="index")
    conda:
        ENV
    params:
        run_dir=lambda w, output: os.path.dirname(output.index),
        command=CFG["run_command"],
        preface=f"--preface {shlex.quote(CFG['index_preface'])}" if CFG["index_preface"] else "",
        figure_caption=FOREST_CAPTION,
    shell:
        "python -m reranker tables index --run-dir {params.run_dir} --seeds {input.seeds} --sources {input.sources}"
        " --out {output.index} --figure {output.forest} --command {params.command:q} {params.preface} > {log}"
