# The test paper's rules (tests/plugins/fake_paper.py): one table from two evaluations the suite makes.

FAKE = EXP.plugins["fake_paper"]


rule fake_paper_table:
    """BM25 against BM25+RM3, with the suite's significance marks."""
    input:
        spec_files("fake_paper_1"),
        spec=PATH("table_spec", table="fake_paper_1"),
    output:
        md=PATH("table", table="fake_paper_1"),
        numbers=PATH("numbers", table="fake_paper_1"),
    log:
        PATH("log", stage="tables", name="fake_paper_1"),
    params:
        caption=FAKE.section.get("caption", "A fourth paper's table"),
        out=lambda w, output: output.md[: -len(".md")],
    shell:
        "python -m reranker tables results --spec {input.spec} --measures AP@1000 P@20 --baseline-row BM25"
        " {SIGNIFICANCE} --caption {params.caption:q} --formats md --out {params.out} --numbers {output.numbers} > {log}"
