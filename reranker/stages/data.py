"""The files no library downloads (workflow/config/downloads.yaml): fetch one, derive one, check them, list them.

`fetch` downloads with pooch into the data folder (BIRCH_DATA, else data/), with a progress bar, from the entry's
origin or from BIRCH_DATA_URL (an HTTP mirror of the data folder); only a file whose sha256 is the registry's is
put in place. `derive` makes a derived entry from its sources. `check` verifies every registered file that is there.
The module reranker.corpora.downloads says how each step keeps a half-made file out of place.
"""

from __future__ import annotations

import argparse
import sys

from reranker.corpora import downloads
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import InputError


def _entry(registry: dict, path: str) -> downloads.Entry:
    if path not in registry:
        raise InputError(f"{path}: not in {downloads.REGISTRY.name}; registered: {', '.join(sorted(registry))}")
    return registry[path]


@exits_on_input_error("data")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker data", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="download registered files that are missing, and check them")
    derive = commands.add_parser("derive", help="make a derived file from its (checked) sources")
    for command in (fetch, derive):
        command.add_argument("--path", action="append", required=True, help="a registry path (under the data folder)")
    fetch.add_argument("--no-progress", action="store_true", help="no progress bar")
    commands.add_parser("check", help="verify every registered file in the data folder; list those missing")
    commands.add_parser("list", help="every registered file: path, size, licence, origin")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    registry, root = downloads.load_registry(), downloads.data_root()
    if args.command == "fetch":
        for path in args.path:
            entry = _entry(registry, path)
            where = downloads.verify(entry, root) if (root / path).exists() else downloads.fetch(entry, root, not args.no_progress)
            print(where)
    elif args.command == "derive":
        for path in args.path:
            print(downloads.derive(_entry(registry, path), registry, root))
    elif args.command == "check":
        checked = downloads.verify_present(registry.values(), root)
        missing = [path for path in registry if not (root / path).exists()]
        print(f"{root}: {len(checked)} registered files checked" + (f"; missing (fetched on first use): {', '.join(missing)}"
                                                                   if missing else ""))
    else:
        for entry in registry.values():
            source = f"derived from {', '.join(entry.derive['from'])}" if entry.derived else entry.url
            print("\t".join([entry.path, str(entry.size), entry.licence, source]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
