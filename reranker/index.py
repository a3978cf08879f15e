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
import shutil
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from tqdm import tqdm

from reranker.files import file_sha256
from reranker.java import anserini_jar, autoclass, start_jvm
from reranker.trec import FormatError

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


def _document(line: bytes, path: Path, line_no: int) -> dict[str, str]:
    try:
        doc = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise FormatError(path, line_no, f"not a JSON object: {err}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), str) or not isinstance(doc.get("text"), str):
        raise FormatError(path, line_no, 'a document is {"id": str, "title": str, "text": str}')
    docid, title = doc["id"], doc.get("title") or ""
    if not docid or docid != "".join(docid.split()):
        raise FormatError(path, line_no, f"document id {docid!r} is empty or holds whitespace (TREC runs cannot hold it)")
    if not isinstance(title, str):
        raise FormatError(path, line_no, "title must be a string")
    contents = f"{title}\n{doc['text']}" if title.strip() else doc["text"]
    return {"id": docid, "contents": contents}


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
        with open(path, "rb") as f, tqdm(total=path.stat().st_size, unit="B", unit_scale=True,
                                          desc=f"convert {path.name}", file=sys.stderr) as bar:
            for line_no, line in enumerate(f, start=1):
                bar.update(len(line))
                if not line.strip():
                    continue
                doc = _document(line, path, line_no)
                if doc["id"] in seen:
                    raise FormatError(path, line_no, f"document id {doc['id']!r} already used on line {seen[doc['id']]}")
                seen[doc["id"]] = line_no
                counts["empty"] += not doc["contents"].strip()
                outs[counts["docs"] % shards].write(json.dumps(doc, ensure_ascii=False) + "\n")
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
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp_index = index_dir.with_name(index_dir.name + ".tmp")
    shutil.rmtree(tmp_index, ignore_errors=True)  # left by an interrupted build
    with tempfile.TemporaryDirectory(prefix=f".{index_dir.name}.collection.", dir=index_dir.parent) as collection_dir:
        counts = convert_docs(docs_jsonl, collection_dir, shards=max(1, threads))
        counters = _run_index_collection(Path(collection_dir), tmp_index, threads)
    stats = index_stats(tmp_index)
    expected = counts["docs"] - counts["empty"]
    if stats["documents"] != expected or counters["errors"] or counters["unindexable"]:
        raise RuntimeError(f"{docs_jsonl}: {counts['docs']} documents ({counts['empty']} empty) but the index in {tmp_index} "
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
    shutil.rmtree(index_dir, ignore_errors=True)
    os.replace(tmp_index, index_dir)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker index", description=__doc__.splitlines()[0])
    parser.add_argument("--docs", required=True, help="docs.jsonl: one {id, title, text} object per line")
    parser.add_argument("--index", required=True, help="index directory to create")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--heap", help="JVM heap, e.g. 4g (default: BIRCH_JAVA_HEAP or 4g)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    previous = read_build_info(args.index)
    record = build_index(args.docs, args.index, threads=args.threads, heap=args.heap)
    status = "up to date" if record == previous else f"built in {record['seconds']} s"
    print(f"{args.index}: {record['documents']} documents, {record['unique_terms']} terms, {status}"
          + (f" ({record['empty_docs']} empty documents not indexed)" if record["empty_docs"] else ""))
    return 0
