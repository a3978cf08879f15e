"""`python -m reranker.workflow.index`: a stored reference's index (its README.md and forest plot) made anew from
every table stored there, with the seed file, the sources' numbers and the preface of the profile that made it, as
the DAG's `seed_index` rule takes them from the same configuration. After a part is promoted (`make promote
PART=name`, which calls `make index`), the claims of all parts are judged together.

Not a stage: it reads the configuration with the papers' plugins (reranker.experiments), which stages never import.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from reranker.core.config import REPO_ROOT
from reranker.experiments import load_config
from reranker.formats.atomic import write_text
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import InputError
from reranker.formats.layout import Layout
from reranker.report.forest import FIGURE
from reranker.report.seed_index import index
from reranker.reproduction.seeds import load_seeds

PROFILES = REPO_ROOT / "workflow" / "profiles"


def profile_layers(profile: str) -> list[Path]:
    """The configuration files a profile layers over the default experiment (its `configfile`); none for the default."""
    if profile == "default":
        return []
    found = PROFILES / profile / "config.yaml"
    if not found.is_file():
        known = ", ".join(["default", *sorted(p.parent.name for p in PROFILES.glob("*/config.yaml"))])
        raise InputError(f"no profile {profile!r} (workflow/profiles/{profile}/config.yaml); known: {known}")
    return [REPO_ROOT / f for f in (yaml.safe_load(found.read_text(encoding="utf-8")) or {}).get("configfile") or ()]


@exits_on_input_error("index")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker.workflow.index", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True, help="the stored reference folder (results, results/quick)")
    parser.add_argument("--profile", default="default", help="the profile whose configuration made it (default: %(default)s)")
    parser.add_argument("--command", default="", help="the command that made it, named in the README")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    config = load_config(profile_layers(args.profile))
    layout = Layout(args.reference)
    # as `python -m reranker tables index` does for the DAG's rule: the sources' numbers beside the seed file
    text = index(load_seeds(config["seed_tables"]), Path(args.reference), args.command,
                 layout.path("figure", figure=FIGURE), config["index_preface"] or "")
    write_text(layout.path("seed_index"), text)
    print(layout.path("seed_index"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
