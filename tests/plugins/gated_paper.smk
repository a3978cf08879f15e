# The gated test plugin's one job (tests/plugins/gated_paper.py); no table, so `all` never asks for it.
import time

GATED = EXP.plugins["gated_paper"]


rule gated_count:
    """Counts the collection's documents once the test's gate file exists (at most 10 minutes).
    A `run:` job: Snakemake runs it in a child that reads the Snakefile again while the run holds its lock."""
    input:
        PATH("docs", collection=GATED.slug),
    output:
        PATH("gated_count", collection=GATED.slug),
    localrule: True
    params:
        gate=GATED.section["gate"],
    run:
        deadline = time.monotonic() + 600
        while not os.path.exists(params.gate) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not os.path.exists(params.gate):
            raise WorkflowError(f"gate {params.gate} never opened")
        with open(input[0], encoding="utf-8") as docs, open(output[0], "w", encoding="utf-8") as out:
            where = "in a child process" if LOCK is None else "by the lock's holder"  # the Snakefile's LOCK, as read here
            out.write(f"{sum(1 for _ in docs)} documents, counted {where}\n")
