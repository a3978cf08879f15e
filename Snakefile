# birch-repro: one DAG from collections to every table.
#   snakemake --cores all                       default: open collections on CPU
#   snakemake --cores all --profile workflow/profiles/quick   the small version the tests run
#   snakemake --cores all --profile workflow/profiles/paper   Birch's checkpoints, licensed collections, GPU
from snakemake.utils import min_version, validate

min_version("9.0")

configfile: "workflow/config/collections.yaml"
configfile: "workflow/config/checkpoints.yaml"
configfile: "workflow/config/config.yaml"

validate(config, "workflow/schemas/config.schema.yaml")

# Used with --use-singularity / --sdm apptainer; build it from containers/ (see README).
container: config["container"]


include: "workflow/rules/common.smk"
include: "workflow/rules/collections.smk"
include: "workflow/rules/retrieval.smk"
include: "workflow/rules/evaluation.smk"
include: "workflow/rules/neural.smk"
include: "workflow/rules/tables.smk"


rule all:
    input:
        TABLES,
