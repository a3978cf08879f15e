"""Compare a run's numbers with the stored reference, and promote a run to be the new reference.

Every number in the run's `numbers/*.json` is matched with the reference's, within a tolerance per
kind: numbers made by Lucene alone (first-stage rows, dataset statistics) must match exactly
(`compare.lucene`), numbers that involve a model within `compare.model`. A table of matches and
drifts is printed and written; the exit status is 1 when any number drifts beyond its tolerance.
Numbers only one side has are listed, not failed: a changed configuration adds or drops rows.
The comparison is reranker.reproduction.reference's; the promotion reranker.reproduction.promote's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reranker.core import settings as stage_settings
from reranker.core.config import load_config
from reranker.formats.atomic import write_text
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import InputError
from reranker.reproduction.promote import promote, refuse_if_interrupted
from reranker.reproduction.reference import compare_files, compare_numbers, report


@exits_on_input_error("compare")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="the run's resolved configuration (its run_dir, reference and compare:)")
    parser.add_argument("--out", help="also write the report here (Markdown)")
    parser.add_argument("--promote", action="store_true",
                        help="copy the run's tables, numbers, figures, folds, parts and the papers' published folders (Birch's "
                             "fusion/) over the reference: staged beside it, then "
                             "renamed into place; an interrupted promote is finished first (reranker.reproduction.promote)")
    parser.add_argument("--prune", action="store_true",
                        help="with --promote: also delete stored files that the run did not make (kept by default, "
                             "so that promoting a partial run loses nothing)")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    settings = stage_settings.compare(config)  # its tolerances and the reference
    run_dir, reference, part = Path(config["run_dir"]), Path(settings.pop("reference")), settings.pop("part")
    if not (run_dir / "numbers").is_dir():
        raise InputError(f"{run_dir}/numbers does not exist; run the workflow first")
    if args.promote:
        finished, copied, not_made = promote(run_dir, reference, prune=args.prune,
                                             folders=stage_settings.promote(config)["folders"])
        if finished is not None:
            print(f"finished an interrupted promote into {reference} first: {finished} files moved or deleted")
        print(f"promoted {len(copied)} files from {run_dir} to {reference}")
        for path in not_made:
            print(f"{'pruned' if args.prune else 'kept, not made by this run'}: {path}")
        return 0
    refuse_if_interrupted(reference)
    # A part compares what it made: the reference's other tables are other parts', not missing from this run.
    differences = compare_numbers(run_dir, reference, settings, only_run=bool(part))
    text = report(differences, compare_files(run_dir, reference, only_run=bool(part)), run_dir, reference, settings)
    print(text)
    drifts = [d for d in differences if d.status == "drift"]
    if drifts:
        kept = run_dir / "comparison.drift.md"  # the rule's output is removed on failure; this stays
        write_text(kept, text)
        print(f"compare: {len(drifts)} numbers drift beyond tolerance; if the change is intended, "
              f"promote the run: python -m reranker compare --config {args.config or '<config>'} --promote",
              file=sys.stderr)
        return 1
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_text(args.out, text)
    return 0
