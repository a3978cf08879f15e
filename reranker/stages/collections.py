"""Collections by config id: documents, queries and qrels through one interface, plus CV folds.

    from reranker.stages.collections import load_collection
    cacm = load_collection("cacm")   # its registry entry, ${BIRCH_DATA} expanded
    cacm.queries()["1"]              # 'What articles exist which deal with TSS (Time Sharing System), ...'
    len(cacm.judged_qids())          # 52
    next(cacm.docs_iter())           # Doc(doc_id='1', title='Preliminary Report-International ...', text='')

Two sources (workflow/config/collections.yaml): `ir_datasets` (an ir_datasets id, optionally with
local NIST topics / TREC qrels files) and `smart` (the classic SMART tagged files, plain or inside
a tar.gz). Run-only collections (licensed documents) give queries, qrels and a provided run.

Folds are written as JSON `{fold: [test qids]}` (fold names "1".."k"); later stages read them
with `reranker.formats.folds.read_folds`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tarfile
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from contextlib import nullcontext
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from tqdm import tqdm

from reranker.core.arguments import add_config
from reranker.core.config import ConfigError, collection_config, entry_defaults, load_config, merge
from reranker.formats.atomic import file_lock, write_json
from reranker.formats.docs import Doc, strip_markup, write_docs
from reranker.formats.errors import FormatError, InputError, exits_on_input_error
from reranker.formats.folds import Folds, load_folds, seeded_folds, write_folds
from reranker.formats.ids import qid_order
from reranker.formats.qrels import Qrels, parse_qrels, read_qrels, write_qrels
from reranker.formats.text import open_text
from reranker.formats.topics import read_trec_topics, write_topics_tsv


class DocumentsUnavailableError(InputError, RuntimeError):
    """The documents of a collection cannot be read here (licensed, not provided)."""


# ---------------------------------------------------------------------------------------------
# Ids


def _normalise_id(raw: str) -> str:
    """SMART ids with and without leading zeros name the same record (CACM qrels `01` is `.I 1`)."""
    return str(int(raw)) if raw.isdigit() else raw


# ---------------------------------------------------------------------------------------------
# SMART files


class SmartRecord(NamedTuple):
    id: str
    line_no: int  # of the `.I` line
    fields: dict[str, str]  # marker letter -> text


_MARKER = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


def read_smart_records(lines: Iterable[str], source: str) -> Iterator[SmartRecord]:
    """Parse SMART tagged records: `.I id`, then `.T`, `.A`, `.W`, `.X`, ... fields.

    Records without any field (CACM's query file ends with an empty `.I 0`) are skipped.
    """
    record_id, record_line, fields, marker = None, 0, {}, None
    seen: set[str] = set()
    for line_no, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        match = _MARKER.match(line)
        if match and match.group(1) == "I":
            if record_id is not None and fields:
                yield SmartRecord(record_id, record_line, _joined(fields))
            raw_id = (match.group(2) or "").strip()
            if not raw_id or len(raw_id.split()) != 1:
                raise FormatError(source, line_no, f"a record starts with `.I <id>`, found {line!r}")
            record_id, record_line, fields, marker = _normalise_id(raw_id), line_no, {}, None
            if record_id in seen:
                raise FormatError(source, line_no, f"record {record_id} appears twice")
            seen.add(record_id)
        elif record_id is None:
            if line.strip():
                raise FormatError(source, line_no, f"text before the first `.I <id>` line: {line[:60]!r}")
        elif match:
            marker = match.group(1)
            fields.setdefault(marker, [])
            if match.group(2):
                fields[marker].append(match.group(2))
        elif marker is None:
            if line.strip():
                raise FormatError(source, line_no, f"text after `.I {record_id}` before any field marker")
        else:
            fields[marker].append(line)
    if record_id is not None and fields:
        yield SmartRecord(record_id, record_line, _joined(fields))


def _joined(fields: dict[str, list[str]]) -> dict[str, str]:
    return {marker: "\n".join(lines) for marker, lines in fields.items()}


def read_smart_qrels(lines: Iterable[str], source: str) -> Qrels:
    """SMART relevance files: `qid docid ...` per line, every pair relevant (grade 1). Read as TREC
    qrels (`qid 0 docid 1`), so repeated pairs and empty files fail as they do there."""

    def as_trec() -> Iterator[tuple[int, list[str]]]:
        for line_no, line in enumerate(lines, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 2 or not (fields[0].isdigit() and fields[1].isdigit()):
                raise FormatError(source, line_no, f"a SMART qrels line starts with two numeric ids `qid docid`, "
                                                   f"found {line.strip()!r}")
            doc_id = _normalise_id(fields[1])
            if doc_id == "0":  # SMART numbers documents from 1; TREC's second field is the iteration, 0
                raise FormatError(source, line_no, f"document 0 does not exist in SMART numbering; {line.strip()!r} "
                                                   "looks like TREC layout (qid 0 docid grade): set `qrels_format: trec` "
                                                   "for the collection")
            yield line_no, [_normalise_id(fields[0]), "0", doc_id, "1"]

    return parse_qrels(as_trec(), source)


# ---------------------------------------------------------------------------------------------
# Collections


def map_grades(qrels: Qrels, grades: Mapping[int, int] | None, source: str) -> Qrels:
    """Raw relevance codes to gains by `grades`; a code the mapping lacks stops here, naming it."""
    if not grades:
        return qrels
    unknown = sorted({code for judged in qrels.values() for code in judged.values()} - set(grades))
    if unknown:
        raise FormatError(source, None, f"relevance codes {unknown} are not in the collection's `grades` mapping "
                                        f"{dict(sorted(grades.items()))}: add them (raw code -> gain)")
    return {qid: {doc: grades[code] for doc, code in judged.items()} for qid, judged in qrels.items()}


class Collection(ABC):
    """One collection of the registry. Build it with `load_collection` or `collection_from_entry`."""

    def __init__(self, entry: Mapping[str, Any]):
        self.entry = dict(entry)
        self.id: str = self.entry["id"]
        self._queries: dict[str, str] | None = None
        self._qrels: Qrels | None = None

    @property
    def run_only(self) -> bool:
        return bool(self.entry["run_only"])

    @property
    def relevant_min_grade(self) -> int:
        return int(self.entry["relevant_min_grade"])

    @property
    def run_path(self) -> Path | None:
        return Path(self.entry["run"]) if self.entry.get("run") else None

    def check_files(self) -> None:
        """Fail at once, naming the file, what it is and where it goes, if a needed file is missing."""
        for key in self._file_descriptions():
            self._require(key)

    def check_run(self, name: str) -> Path:
        """A run of the entry's `runs` (one that comes with the collection) is there; else name it, and where it goes."""
        run = self.entry["runs"][name]
        return self._require_path(run["file"], f"runs: {name}: file", f"{name}, {run['label']}")

    def docs_iter(self) -> Iterator[Doc]:
        if self.run_only:
            raise DocumentsUnavailableError(f"{self.id} is run-only: {self._licence_note()}")
        return self._docs()

    def exclusive(self):
        """Held while the source is read: sources that build derived files on first use need it."""
        return nullcontext()

    def docs_count(self) -> int | None:
        """The number of documents, when known without reading them all."""
        return None

    def queries(self) -> dict[str, str]:
        if self._queries is None:
            self._queries = self._read_queries()
        return self._queries

    @property
    def grades(self) -> dict[int, int] | None:
        """Raw qrels code -> graded gain (`grades:` in the entry), or None where the codes are the gains."""
        grades = self.entry.get("grades")
        return {int(code): int(gain) for code, gain in grades.items()} if grades else None

    def qrels(self) -> Qrels:
        """The judgments with the entry's `grades` applied: every measure and objective reads these."""
        if self._qrels is None:
            self._qrels = map_grades(self._read_qrels(), self.grades, self.entry.get("qrels") or f"the qrels of {self.id}")
        return self._qrels

    def judged_qids(self) -> list[str]:
        """Queries with at least one qrels line, in qid order."""
        qrels = self.qrels()
        return qid_order(q for q in self.queries() if qrels.get(q))

    def folds(self) -> Folds | None:
        """The collection's own folds (`folds:` in its entry), checked against its queries."""
        spec = self.entry.get("folds")
        if not spec:
            return None
        path = self._require_path(spec["file"], "folds.file", f"the {spec['format']}-format folds file")
        folds = load_folds(spec)
        unknown = sorted(set().union(*folds.values()) - set(self.queries()))
        if unknown:
            raise FormatError(path, None, f"{len(unknown)} fold qids are not queries of {self.id}: {', '.join(unknown[:10])}")
        return folds

    # -- for subclasses --

    @abstractmethod
    def _files(self) -> dict[str, str]:
        """Entry key -> description of the local files the entry names for docs, queries and qrels."""

    @abstractmethod
    def _docs(self) -> Iterator[Doc]: ...

    @abstractmethod
    def _read_queries(self) -> dict[str, str]: ...

    @abstractmethod
    def _read_qrels(self) -> Qrels: ...

    def _licence_note(self) -> str:
        return ("its documents are not used; queries, qrels and the provided run are. "
                f"Set `run_only: false` for {self.id} in workflow/config/collections.yaml once you have them")

    def _file_descriptions(self) -> dict[str, str]:
        run = {"run": "the provided TREC run"} if self.run_path is not None else {}
        return {**self._files(), **run}

    def _require(self, key: str) -> Path:
        return self._require_path(self.entry[key], key, self._file_descriptions()[key])

    def _require_path(self, path: str | os.PathLike, key: str, what: str) -> Path:
        path = Path(path)
        if path.exists():
            return path
        birch_data = Path(os.environ.get("BIRCH_DATA") or "data")
        if path.is_relative_to(birch_data) and path != birch_data:
            top = path.relative_to(birch_data).parts[0]
            where = f"put it there or set BIRCH_DATA to the folder that holds {top}/"
        else:
            where = f"put it there or change `{key}` of {self.id} in workflow/config/collections.yaml"
        raise FileNotFoundError(f"{self.id} needs {path} ({what}); {where}")


class IrDatasetsCollection(Collection):
    """Documents, queries and qrels through ir_datasets; local topics/qrels files override its own."""

    _TOPIC_FIELDS = {"title": "title", "desc": "description", "narr": "narrative", "text": "text"}

    @property
    def dataset_id(self) -> str:
        return self.entry["dataset"]

    @cached_property
    def dataset(self):
        import ir_datasets

        return ir_datasets.load(self.dataset_id)

    def docs_count(self) -> int | None:
        return None if self.run_only else self.dataset.docs_count()

    def exclusive(self):
        # ir_datasets builds docstores and extracts files on first use, with no lock of its own, and
        # subsets share them (beir/scifact/train and /test: one docs.pklz4). Two jobs building at
        # once corrupt it or, silently, store every document twice. One lock per top-level dataset.
        import ir_datasets

        family = self.dataset_id.split("/")[0]
        return file_lock(Path(ir_datasets.util.home_path()) / ".locks" / f"{family}.lock")

    @property
    def _topics_field(self) -> str:
        """The field of local NIST topics used as the query."""
        field = self.entry["query_field"]
        return field if field in {"title", "desc", "narr"} else "title"

    def _files(self) -> dict[str, str]:
        files = {}
        if self.entry.get("queries"):
            files["queries"] = f"the NIST topics file; <{self._topics_field}> is the query"
        if self.entry.get("qrels"):
            files["qrels"] = "the TREC qrels file"
        return files

    def _docs(self) -> Iterator[Doc]:
        try:
            for record in self.dataset.docs_iter():
                yield self._doc(record)
        except FileNotFoundError as error:
            expected = error.filename or (error.args[0] if error.args else "?")
            obtain = "They are licensed: obtain" if self.entry["licensed"] else "Obtain"
            raise DocumentsUnavailableError(
                f"{self.id}: ir_datasets cannot find the documents of {self.dataset_id} at {expected}. "
                f"{obtain} them (see {self._access_url()}) and put them there (IR_DATASETS_HOME sets the "
                f"folder), or set `run_only: true` for {self.id} to use its queries, qrels and run only") from error

    def _doc(self, record) -> Doc:
        # Field names differ by dataset: title/text, title/body (disks45, WaPo), headline/body (NYT).
        title = getattr(record, "title", None) or getattr(record, "headline", None) or ""
        text = getattr(record, "text", None) or getattr(record, "body", None) or ""
        if self.entry["title_in_text"] and title:
            # Cranfield's text repeats the title's lines (twice with typos), so cut lines, not a prefix.
            text = "\n".join(text.split("\n")[len(title.split("\n")):])
        return Doc(record.doc_id, strip_markup(title), strip_markup(text))

    def _read_queries(self) -> dict[str, str]:
        if self.entry.get("queries"):
            return read_trec_topics(self._require("queries"), self._topics_field)
        fields = self.dataset.queries_cls()._fields
        field = self.entry["query_field"]
        attribute = self._TOPIC_FIELDS[field] if field else "text" if "text" in fields else "title"
        if attribute not in fields:
            raise ConfigError(f"{self.id}: query_field {field!r}, but the queries of {self.dataset_id} "
                              f"have the fields {', '.join(fields)}")
        return {query.query_id: " ".join(getattr(query, attribute).split()) for query in self.dataset.queries_iter()}

    def _read_qrels(self) -> Qrels:
        if self.entry.get("qrels"):
            return read_qrels(self._require("qrels"))
        qrels: Qrels = {}
        for qrel in self.dataset.qrels_iter():
            if qrel.doc_id in qrels.get(qrel.query_id, {}):
                raise FormatError(f"ir_datasets {self.dataset_id}", None, f"query {qrel.query_id} judges document "
                                  f"{qrel.doc_id} twice: its qrels cache may be corrupt (delete the derived files)")
            qrels.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
        return qrels

    def _licence_note(self) -> str:
        return (f"its documents (ir_datasets {self.dataset_id}) are licensed and not used here. If you hold "
                f"them, put them where ir_datasets looks under IR_DATASETS_HOME (see {self._access_url()}) "
                f"and set `run_only: false` for {self.id} in workflow/config/collections.yaml")

    def _access_url(self) -> str:
        return f"https://ir-datasets.com/{self.dataset_id.split('/')[0]}.html#DataAccess"


class SmartCollection(Collection):
    """The classic SMART test collections: documents .T (title) and .W (text), queries .W."""

    @property
    def archive(self) -> Path | None:
        return Path(self.entry["archive"]) if self.entry.get("archive") else None

    def _files(self) -> dict[str, str]:
        if self.archive is not None:
            members = f"{self.entry['docs']}, {self.entry['queries']} and {self.entry['qrels']}"
            return {"archive": f"the tar.gz archive holding {members}"}
        return {"docs": "the SMART documents file", "queries": "the SMART queries file",
                "qrels": "the SMART relevance judgements file"}

    def _lines(self, key: str) -> tuple[str, list[str]]:
        """The lines of the docs, queries or qrels file, and its name for error messages."""
        if self.archive is None:
            path = self._require(key)
            with open_text(path) as f:
                return str(path), f.readlines()
        archive = self._require("archive")
        member = self.entry[key]
        with tarfile.open(archive) as tar:
            try:
                data = tar.extractfile(member)
            except KeyError:
                data = None
            if data is None:
                raise FormatError(archive, None, f"{self.id} needs the member {member}; the archive holds {', '.join(tar.getnames())}")
            return f"{archive}/{member}", data.read().decode("utf-8", errors="replace").splitlines()

    @cached_property
    def _records(self) -> list[SmartRecord]:
        source, lines = self._lines("docs")
        return list(read_smart_records(lines, source))

    def docs_count(self) -> int | None:
        return None if self.run_only else len(self._records)

    def _docs(self) -> Iterator[Doc]:
        for record in self._records:
            yield Doc(record.id, strip_markup(record.fields.get("T", "")), strip_markup(record.fields.get("W", "")))

    def _read_queries(self) -> dict[str, str]:
        source, lines = self._lines("queries")
        queries = {}
        for record in read_smart_records(lines, source):
            text = " ".join(record.fields.get("W", "").split())
            if not text:
                raise FormatError(source, record.line_no, f"query {record.id} has no `.W` text")
            queries[record.id] = text
        return queries

    def _read_qrels(self) -> Qrels:
        source, lines = self._lines("qrels")
        if self.entry.get("qrels_format") == "trec":
            return parse_qrels(((n, line.split()) for n, line in enumerate(lines, start=1) if line.split()), source)
        return read_smart_qrels(lines, source)


class TitlesCollection(Collection):
    """Weak supervision from another collection's documents alone (MacAvaney et al., SIGIR 2019):
    each document's title is a query, its body the one relevant document. No judgments are read.

    Documents whose title or body is shorter than `min_title_words` / `min_body_words` are left
    out (CACM's title-only records). The parent's entry is resolved into `parent` by the config."""

    @cached_property
    def parent(self) -> Collection:
        if not isinstance(self.entry.get("parent"), Mapping):
            raise ConfigError(f"collection {self.id!r}: source titles needs `of: <collection id>`")
        return collection_from_entry(self.entry["parent"])

    @property
    def run_only(self) -> bool:
        return self.parent.run_only

    def check_files(self) -> None:
        self.parent.check_files()

    def exclusive(self):
        return self.parent.exclusive()

    def _files(self) -> dict[str, str]:
        return {}

    @cached_property
    def _titled(self) -> list[Doc]:
        def words(text: str) -> int:
            return len(text.split())
        # Callers that build derived files hold exclusive() (the parent's lock) around this already.
        return [Doc(doc.doc_id, " ".join(doc.title.split()).rstrip(" ."), doc.text) for doc in self.parent.docs_iter()
                if words(doc.title) >= self.entry["min_title_words"] and words(doc.text) >= self.entry["min_body_words"]]

    def _docs(self) -> Iterator[Doc]:
        # Bodies only: the title is the query, so a document must not contain it.
        for doc in self._titled:
            yield Doc(doc.doc_id, "", doc.text)

    def _read_queries(self) -> dict[str, str]:
        if self.parent.run_only:
            raise DocumentsUnavailableError(f"{self.id}: its queries are the titles of {self.parent.id}, which is run-only")
        return {doc.doc_id: doc.title for doc in self._titled}

    def _read_qrels(self) -> Qrels:
        return {doc.doc_id: {doc.doc_id: 1} for doc in self._titled}


_SOURCES: dict[str, type[Collection]] = {"ir_datasets": IrDatasetsCollection, "smart": SmartCollection,
                                         "titles": TitlesCollection}


def collection_from_entry(entry: Mapping[str, Any]) -> Collection:
    """A collection from its registry entry (with `id`), paths already expanded; the schema's defaults fill the rest."""
    entry = merge(entry_defaults("collection"), entry)
    source = entry.get("source")
    if source not in _SOURCES:
        raise ConfigError(f"collection {entry.get('id')!r}: source must be one of {', '.join(_SOURCES)}, not {source!r}")
    return _SOURCES[source](entry)


def load_collection(collection_id: str, config: Mapping | None = None) -> Collection:
    """The collection `collection_id` of `config` (default: the registries + default experiment)."""
    return collection_from_entry(collection_config(config if config is not None else load_config(), collection_id))


# ---------------------------------------------------------------------------------------------
# Statistics and export


def _docs_with_progress(collection: Collection) -> Iterator[Doc]:
    return tqdm(collection.docs_iter(), desc=f"{collection.id} docs", unit="doc",
                total=collection.docs_count(), file=sys.stderr, mininterval=1.0)


def _query_stats(collection: Collection) -> dict[str, Any]:
    qrels = collection.qrels()
    judged = collection.judged_qids()
    relevant = [sum(grade >= collection.relevant_min_grade for grade in qrels[q].values()) for q in judged]
    return {
        "collection": collection.id,
        "queries": len(collection.queries()),
        "judged_queries": len(judged),
        "qrels": sum(len(judgements) for judgements in qrels.values()),
        "mean_relevant_per_query": sum(relevant) / len(relevant) if relevant else 0.0,
    }


class _DocStats:
    def __init__(self) -> None:
        self.docs = 0
        self.words = 0

    def add(self, doc: Doc) -> None:
        self.docs += 1
        self.words += len(doc.title.split()) + len(doc.text.split())

    def as_dict(self) -> dict[str, Any]:
        return {"docs": self.docs, "mean_doc_length_words": self.words / self.docs if self.docs else 0.0}


def collection_stats(collection: Collection) -> dict[str, Any]:
    """docs, queries, judged_queries, qrels (lines), mean_relevant_per_query, mean_doc_length_words.

    Run-only collections have no document statistics.
    """
    collection.check_files()
    with collection.exclusive():
        stats = _query_stats(collection)
        if not collection.run_only:
            doc_stats = _DocStats()
            for doc in _docs_with_progress(collection):
                doc_stats.add(doc)
            stats.update(doc_stats.as_dict())
    return stats


def export_collection(collection: Collection, out_dir: str | os.PathLike) -> dict[str, Any]:
    """Write docs.jsonl, topics.tsv, qrels.txt and stats.json into `out_dir`; return the stats.

    Each file is written to `<name>.tmp` and renamed, stats.json last, so a present stats.json
    means a complete export. Run-only collections get no docs.jsonl.
    """
    collection.check_files()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with collection.exclusive():
        return _export(collection, out)


def _export(collection: Collection, out: Path) -> dict[str, Any]:
    stats = _query_stats(collection)  # reads queries and qrels: malformed files fail before the docs
    if not collection.run_only:
        doc_stats = _DocStats()

        def counted() -> Iterator[Doc]:
            for doc in _docs_with_progress(collection):
                doc_stats.add(doc)
                yield doc

        doc_ids = write_docs(counted(), out / "docs.jsonl")
        absent = qid_order({doc for judged in collection.qrels().values() for doc in judged} - doc_ids)
        if absent:  # judgments on documents nobody can retrieve: recall and AP would be quietly lower
            (out / "docs.jsonl").unlink()
            raise FormatError(collection.entry.get("qrels") or f"the qrels of {collection.id}", None,
                              f"{len(absent)} judged documents are not in the collection (e.g. {', '.join(absent[:5])}): "
                              "check that the qrels belong to these documents (and their layout: qrels_format)")
        stats.update(doc_stats.as_dict())
    write_topics_tsv(collection.queries(), out / "topics.tsv")
    write_qrels(collection.qrels(), out / "qrels.txt")
    write_json(out / "stats.json", stats, indent=2)
    return stats


# ---------------------------------------------------------------------------------------------
# Command line


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
        add_config(command, "the collection's entry; birch.folds for seeded folds")
    for command in (export, stats, folds):
        command.add_argument("--collection", required=True, help="a collection id of workflow/config/collections.yaml")
    args = parser.parse_args(argv)

    config = load_config(args.config)
    if args.command == "list":
        for collection_id in config["collections"]:
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
            k, seed = config["birch"]["folds"]["k"], config["birch"]["folds"]["seed"]
            result = seeded_folds(judged, k, seed)
            origin = f"seeded folds (k={k}, seed={seed}) over the judged queries of {collection.id}"
        write_folds(result, args.out)
        sizes = ", ".join(str(len(qids)) for qids in result.values())
        print(f"wrote {origin} to {args.out}: test sizes {sizes}", file=sys.stderr)
    return 0
