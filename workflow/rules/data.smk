# The files no library downloads (workflow/config/downloads.yaml), where the data folder lacks them: fetched with
# pooch from their origin (or BIRCH_DATA_URL, an HTTP mirror of the data folder) and checked, or derived from fetched
# ones. A rule exists for a file only while it is missing, so a mirror that holds a derived file is never asked for
# its sources. The Snakefile has checked every file that is there (DATA).
DATA_FETCH = DATA.missing(derived=False)
DATA_DERIVE = DATA.missing(derived=True)


rule data:
    """Every file the configuration reads that no library downloads, fetched and checked (`make data`)."""
    input:
        [f"{DATA.root}/{entry.path}" for entry in DATA.needed],


if DATA_FETCH:

    rule fetch_data:
        """One registered file, downloaded and checked (python -m reranker data fetch)."""
        output:
            f"{DATA.root}/{{path}}",
        log:
            pattern("log", stage="data", name="{path}"),
        benchmark:
            pattern("benchmark", stage="data", name="{path}")
        wildcard_constraints:
            path=wildcard_pattern(DATA_FETCH),
        conda:
            ENV
        params:
            root=DATA.root,
        shell:
            "BIRCH_DATA={params.root:q} python -m reranker data fetch --path {wildcards.path:q} 2> {log}"


if DATA_DERIVE:

    rule derive_data:
        """One registered file made from others (python -m reranker data derive: its registry entry says how)."""
        input:
            lambda w: [f"{DATA.root}/{source}" for source in DATA.registry[w.path].derive["from"]],
        output:
            f"{DATA.root}/{{path}}",
        log:
            pattern("log", stage="data", name="{path}"),
        benchmark:
            pattern("benchmark", stage="data", name="{path}")
        wildcard_constraints:
            path=wildcard_pattern(DATA_DERIVE),
        conda:
            ENV
        params:
            root=DATA.root,
        shell:
            "BIRCH_DATA={params.root:q} python -m reranker data derive --path {wildcards.path:q} 2> {log}"
