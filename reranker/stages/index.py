"""Build a Lucene index of a collection's `docs.jsonl` with Anserini (pyserini's jar).

The index stores positions, document vectors (RM3 needs them) and the raw document, and uses
Anserini's default English analyzer (Porter stemmer, Lucene's stopwords), as pyserini does.
Each Lucene document is `{"id", "contents": title + "\\n" + text}`.

The index is built in `<index>.tmp` and renamed when complete; `<index>/build.json` records the
input's sha256, so an index of the same input with the same settings is not rebuilt.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from tqdm import tqdm

from reranker.core.arguments import add_config
from reranker.core.config import default as schema_default
from reranker.core.flags import checked
from reranker.core.java import anserini_jar, autoclass, start_jvm
from reranker.formats.atomic import atomic_dir
from reranker.formats.docs import iter_docs
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import FormatError, InputError
from reranker.formats.text import file_sha256

log = logging.getLogger(__name__)

BUILD_FILE = "build.json"
# Part of build.json: an index built with other settings is rebuilt.
SETTINGS = {"collection": "JsonCollection", "generator": "DefaultLuceneDocumentGenerator", "analyzer": "DefaultEnglishAnalyzer",
            "stemmer": "porter", "store_positions": True, "store_docvectors": True, "store_raw": True, "optimize": True}


def read_build_info(index_dir: str | os.PathLike) -> dict | None:
    """The build.json of a complete index, or None."""
    path = Path(index_dir) / BUILD_FILE
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def _lucene_document(title: str, text: str, doc_id: str) -> dict[str, str]:
    contents = f"{title}\n{text}" if title.strip() else text
    return {"id": doc_id, "contents": contents}


def convert_docs(docs_jsonl: str | os.PathLike, collection_dir: str | os.PathLike, shards: int = 1) -> dict[str, int]:
    """Write docs.jsonl as an Anserini JsonCollection of `shards` files (Anserini indexes one file per thread).

    Returns counts: `docs` (all lines) and `empty` (no text; Anserini skips them).
    Duplicate ids are an error, since Lucene would keep both.
    """
    path, out_dir = Path(docs_jsonl), Path(collection_dir)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file (write it with `python -m reranker collections`)")
    out_dir.mkdir(parents=True, exist_ok=True)
    outs = [open(out_dir / f"docs{i:02d}.jsonl", "w", encoding="utf-8") for i in range(shards)]
    seen: dict[str, int] = {}
    counts = {"docs": 0, "empty": 0}
    try:
        with tqdm(total=path.stat().st_size, unit="B", unit_scale=True, desc=f"convert {path.name}",
                  file=sys.stderr) as bar:
            for line_no, doc in iter_docs(path, progress=bar.update):
                if doc.doc_id in seen:
                    raise FormatError(path, line_no, f"document id {doc.doc_id!r} already used on line {seen[doc.doc_id]}")
                seen[doc.doc_id] = line_no
                lucene = _lucene_document(doc.title, doc.text, doc.doc_id)
                counts["empty"] += not lucene["contents"].strip()
                outs[counts["docs"] % shards].write(json.dumps(lucene, ensure_ascii=False) + "\n")
                counts["docs"] += 1
    finally:
        for out in outs:
            out.close()
    if not counts["docs"]:
        raise FormatError(path, None, "no documents")
    return counts


def _run_index_collection(collection_dir: Path, index_dir: Path, threads: int) -> dict[str, int]:
    """Anserini's IndexCollection, called through its Args object rather than `main`.

    `main` does not call System.exit, but on a bad argument it prints to stderr and returns
    normally. The constructor raises instead, and the counters can be read; the caller still
    checks the index's document count, since `run` logs some failures rather than raising.
    """
    args = autoclass("io.anserini.index.IndexCollection$Args")()
    args.collectionClass = SETTINGS["collection"]
    args.generatorClass = SETTINGS["generator"]
    args.stemmer = SETTINGS["stemmer"]
    args.input = str(collection_dir)
    args.index = str(index_dir)
    args.threads = threads
    args.storePositions = args.storeDocvectors = args.storeRaw = True
    args.optimize = True  # merge into one segment: Lucene counts unique terms only then, and search is faster
    indexer = autoclass("io.anserini.index.IndexCollection")(args)
    indexer.run()
    counters = indexer.getCounters()
    return {name: int(getattr(counters, name).get()) for name in ("indexed", "empty", "unindexable", "skipped", "errors")}


def index_stats(index_dir: str | os.PathLike) -> dict[str, int]:
    """Lucene's counts for an index: documents, unique_terms, total_terms."""
    utils = autoclass("io.anserini.index.IndexReaderUtils")
    reader = utils.getReader(str(index_dir))
    try:
        stats = utils.getIndexStats(reader)
        return {key: int(stats.get(key)) for key in ("documents", "unique_terms", "total_terms")}
    finally:
        reader.close()


def build_index(docs_jsonl: str | os.PathLike, index_dir: str | os.PathLike, threads: int = 2,
                heap: str | None = None) -> dict:
    """Index docs.jsonl into index_dir unless an index of the same input is already there.

    Returns the build record (also written to index_dir/build.json): input sha256, document
    counts, Lucene stats, versions and seconds. Raises if Anserini indexed fewer documents than
    the input holds, beyond the empty ones it skips by design.
    """
    docs_jsonl, index_dir = Path(docs_jsonl), Path(index_dir)
    if not docs_jsonl.exists():
        raise FileNotFoundError(f"{docs_jsonl}: no such file (write it with `python -m reranker collections`)")
    sha256 = file_sha256(docs_jsonl)
    previous = read_build_info(index_dir)
    if previous and previous.get("input_sha256") == sha256 and previous.get("settings") == SETTINGS:
        log.info("%s is up to date with %s; not rebuilt", index_dir, docs_jsonl)
        return previous

    start_jvm(heap)
    started = time.perf_counter()
    # Built in <index>.tmp, build.json last: an index without it is incomplete and rebuilt.
    with atomic_dir(index_dir, last=BUILD_FILE) as tmp_index:
        with tempfile.TemporaryDirectory(prefix=f".{index_dir.name}.collection.", dir=index_dir.parent) as collection_dir:
            counts = convert_docs(docs_jsonl, collection_dir, shards=max(1, threads))
            counters = _run_index_collection(Path(collection_dir), tmp_index, threads)
        stats = index_stats(tmp_index)
        expected = counts["docs"] - counts["empty"]
        if stats["documents"] != expected or counters["errors"] or counters["unindexable"]:
            raise InputError(f"{docs_jsonl}: {counts['docs']} documents ({counts['empty']} empty) but the index in {tmp_index} "
                               f"holds {stats['documents']} (Anserini counters: {counters})")
        if counts["empty"]:
            log.warning("%s: %d documents have no text; Lucene does not index them", docs_jsonl, counts["empty"])

        record = {
            "input": str(docs_jsonl), "input_sha256": sha256, "settings": SETTINGS,
            "docs": counts["docs"], "empty_docs": counts["empty"], **stats,
            "threads": threads, "seconds": round(time.perf_counter() - started, 2),
            "versions": {"pyserini": version("pyserini"), "anserini_jar": anserini_jar().name,
                         "java": str(autoclass("java.lang.System").getProperty("java.version"))},
        }
        (tmp_index / BUILD_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


@exits_on_input_error("index")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker index", description=__doc__.splitlines()[0])
    parser.add_argument("--docs", required=True, help="docs.jsonl: one {id, title, text} object per line")
    parser.add_argument("--index", required=True, help="index directory to create")
    parser.add_argument("--threads", type=int, default=schema_default("threads"), help="indexing threads (default: the schema's threads)")
    add_config(parser, "java_heap")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    previous = read_build_info(args.index)
    from reranker.core.config import load_config

    threads = checked("--threads", args.threads, "threads")
    record = build_index(args.docs, args.index, threads=threads, heap=load_config(args.config)["java_heap"])
    status = "up to date" if record == previous else f"built in {record['seconds']} s"
    print(f"{args.index}: {record['documents']} documents, {record['unique_terms']} terms, {status}"
          + (f" ({record['empty_docs']} empty documents not indexed)" if record["empty_docs"] else ""))
    return 0
