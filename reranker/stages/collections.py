"""Collections by config id: documents, queries and qrels through one interface, plus CV folds.

Two sources (workflow/config/collections.yaml): `ir_datasets` (an ir_datasets id, optionally with
local NIST topics / TREC qrels files) and `smart` (the classic SMART tagged files, plain or inside
a tar.gz). Run-only collections (licensed documents) give queries, qrels and a provided run.
The collections themselves are reranker.corpora's (reranker.corpora.load.load_collection).

Folds are written as JSON `{fold: [test qids]}` (fold names "1".."k"); later stages read them
with `reranker.formats.folds.read_folds`.
"""

from __future__ import annotations

import argparse
import json
import sys

from reranker.core import settings
from reranker.core.arguments import add_config
from reranker.core.config import load_config
from reranker.corpora.base import Collection
from reranker.corpora.export import collection_stats, export_collection
from reranker.corpora.ir_datasets import IrDatasetsCollection
from reranker.corpora.load import load_collection
from reranker.formats.entry import exits_on_input_error
from reranker.formats.folds import seeded_folds, write_folds


def _describe(collection: Collection) -> str:
    if isinstance(collection, IrDatasetsCollection):
        origin = f"ir_datasets:{collection.dataset_id}"
    else:
        origin = "smart"
    flags = [flag for flag, on in (("run-only", collection.run_only), ("folds", "folds" in collection.entry)) if on]
    try:
        collection.check_files()
        status = "ok"
    except FileNotFoundError as error:
        status = f"missing: {error}"
    return "\t".join([collection.id, origin, ",".join(flags) or "-", status])


@exits_on_input_error("collections")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker collections", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="the registered collections and whether their files are present")
    export = commands.add_parser("export", help="docs.jsonl, topics.tsv, qrels.txt and stats.json")
    export.add_argument("--out", required=True, help="output directory")
    stats = commands.add_parser("stats", help="dataset statistics as JSON on stdout")
    folds = commands.add_parser("folds", help="the collection's folds, or seeded folds over its judged queries")
    folds.add_argument("--out", required=True, help="folds JSON {fold: [test qids]}")
    for command in (listing, export, stats, folds):
        add_config(command, "the collection's entry; seeded_folds for seeded folds")
    for command in (export, stats, folds):
        command.add_argument("--collection", required=True, help="a collection id of workflow/config/collections.yaml")
    args = parser.parse_args(argv)

    config = load_config(args.config)
    if args.command == "list":
        for collection_id in settings.collection_ids(config):
            print(_describe(load_collection(collection_id, config)))
        return 0
    collection = load_collection(args.collection, config)
    if args.command == "export":
        result = export_collection(collection, args.out)
        print(f"exported {collection.id} to {args.out}: {json.dumps(result)}", file=sys.stderr)
    elif args.command == "stats":
        print(json.dumps(collection_stats(collection), indent=2))
    else:
        with collection.exclusive():
            own, judged = collection.folds(), collection.judged_qids()
        if own is not None:
            result = own
            origin = f"{collection.id}'s own folds ({collection.entry['folds']['file']})"
        else:
            folds = settings.collections(config, collection.id)["folds"]
            k, seed = folds["k"], folds["seed"]
            result = seeded_folds(judged, k, seed)
            origin = f"seeded folds (k={k}, seed={seed}) over the judged queries of {collection.id}"
        write_folds(result, args.out)
        sizes = ", ".join(str(len(qids)) for qids in result.values())
        print(f"wrote {origin} to {args.out}: test sizes {sizes}", file=sys.stderr)
    return 0
