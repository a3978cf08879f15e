# birch-repro: one DAG from collections to every table, then a comparison with the stored reference.
#   snakemake --cores all                                       default: open collections on CPU
#   snakemake --cores all --profile workflow/profiles/quick     the small version the tests run
#   snakemake --cores all --profile workflow/profiles/paper     Birch's checkpoints, licensed collections, GPU
#   snakemake --cores all --configfile my.yaml                  your file, merged over the default
# A run writes only under its run folder (`run_dir`, e.g. runs/default/); `python -m reranker compare
# --promote` makes it the new reference (`reference`, e.g. results/).
from snakemake.utils import min_version

from reranker import experiments
from reranker.core.config import write_resolved
from reranker.formats import strict_yaml
from reranker.formats.errors import input_error_line
from reranker.workflow import data as run_data
from reranker.workflow.run_lock import RunLock
from reranker.workflow.experiment import Experiment, job_priority

min_version("9.0")


configfile: "workflow/config/collections.yaml"
configfile: "workflow/config/checkpoints.yaml"
configfile: "workflow/config/config.yaml"


# Each configuration file read strictly first (Snakemake's own YAML reader keeps a duplicate key's last value
# silently), then the merged configuration with the papers' plugins (sections, checkpoints, checks): defaults,
# validated, ${VAR} expanded. A bad value is one line and exit 2, as a stage reports bad input.
try:
    for layer in workflow.configfiles:
        strict_yaml.load(layer)
    CFG = experiments.resolve(config)
except Exception as err:
    if input_error_line(err) is None:
        raise
    run_data.stop(input_error_line(err), stage="config")
EXP = Experiment(CFG)  # with EXP.plugins, the papers this configuration asks for
RUN = CFG["run_dir"]
# One run per run folder, however started (reranker/workflow/run_lock.py): taken before anything is written there and
# kept by the main process until it ends; jobs that read this file again belong to the holder. Beside a
# holder this process only reads (a dry run) and `onstart` refuses to run jobs.
LOCK = RunLock(RUN) if workflow.is_main_process else None
CLI_FILES = [str(f) for f in workflow.overwrite_configfiles or []]  # --configfile and profiles, merged last
if LOCK is None or LOCK.held:
    CONFIG_FILE = str(
        write_resolved(CFG, EXP.layout.path("config"), [str(f) for f in workflow.configfiles if str(f) not in CLI_FILES] + CLI_FILES)
    )
else:
    LOCK.note()
    CONFIG_FILE = EXP.layout.path("config")  # the holder's, unchanged

# The files no library downloads (workflow/config/downloads.yaml): each one that is there checked now, before any job
# reads it; those missing are fetched or derived by rules (workflow/rules/data.smk). Any other missing file is named,
# with where it goes, before any job starts. Either in one line and exit 2, as a stage reports bad input.
try:
    DATA = run_data.prepare(CFG)
    for cid in EXP.collections_to_check():
        EXP.loaded(cid).check_files(DATA.made_by_rules())
except Exception as err:
    if input_error_line(err) is None:
        raise
    run_data.stop(input_error_line(err))


onstart:
    if LOCK is not None:
        LOCK.refuse()  # another process holds the run folder: stop before scheduling a job
    # Licensed documents (the paper profile's) that ir_datasets lacks: all listed, with how to register them, before
    # the first job; not at parse time, so a dry run still shows the DAG on a machine without them.
    missing = run_data.licensed_missing([EXP.loaded(cid) for cid in EXP.collections_to_check()])
    if missing:
        run_data.stop("the licensed documents this configuration reads are missing:\n  " + "\n  ".join(missing))


# Used with --sdm apptainer (or its alias --use-singularity); build it from containers/ (see README).
container: CFG["container"]


report: "workflow/report/workflow.rst"  # snakemake --report: every table and figure, with captions


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/collections.smk"
include: "workflow/rules/retrieval.smk"
include: "workflow/rules/evaluation.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/rerank.smk"  # every paper's segment and score jobs, before the papers' rules that reuse them


for plugin in EXP.plugins.values():  # each paper's own rules (reranker/experiments registers them)

    include: plugin.rules


include: "workflow/rules/tables.smk"


# A part (`make run PART=name`) makes its files and their comparison; its wall clock and resources are written
# after the DAG (reranker.workflow.finish), and the index from the reference once the part is promoted.
rule all:
    input:
        EXP.layout.path("comparison"),
        EXP.layout.path("figure_captions"),
        [] if CFG["part"] else [EXP.layout.path("table", table="resources"), EXP.layout.path("seed_index")],


# Every table and figure of a paper, by its name (`snakemake --cores all radboud`); after `all`, the first rule
# of this file, which a run without targets makes.
for plugin in EXP.plugins.values():

    rule:
        name:
            plugin.name
        input:
            plugin.outputs(),
