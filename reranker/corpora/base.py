"""The common part of every collection: the `Collection` interface (documents, queries, qrels, folds, the
files an entry names) and relevance grades. The sources are its subclasses: smart, ir_datasets, titles."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Container, Iterator, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from reranker.corpora.downloads import data_root
from reranker.formats.docs import Doc
from reranker.formats.errors import FormatError, InputError
from reranker.formats.folds import Folds, load_folds
from reranker.formats.ids import qid_order
from reranker.formats.qrels import Qrels


class DocumentsUnavailableError(InputError, RuntimeError):
    """The documents of a collection cannot be read here (licensed, not provided)."""



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

    def check_files(self, fetched: Container[str] = ()) -> None:
        """Fail at once, naming the file, what it is and where it goes, if a needed file is missing and not among
        `fetched` (the paths a rule downloads or derives first: workflow/config/downloads.yaml)."""
        for key in self._file_descriptions():
            if str(self.entry[key]) not in fetched:
                self._require(key)

    def missing_documents(self) -> str | None:
        """Where documents the collection uses are not available and no library fetches them (licensed ones): one
        line saying where they are looked for and how to get them; None here, where nothing is licensed."""
        return None

    def check_run(self, name: str, fetched: Container[str] = ()) -> None:
        """A run of the entry's `runs` (one that comes with the collection) is there or among `fetched`; else name it,
        and where it goes."""
        run = self.entry["runs"][name]
        if str(run["file"]) not in fetched:
            self._require_path(run["file"], f"runs: {name}: file", f"{name}, {run['label']}")

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

    def source_files(self) -> list[str]:
        """The local files its export reads (the entry's documents, queries, qrels or archive): its rule's declared
        inputs. Not the caches a source reads through (ir_datasets')."""
        return [str(self.entry[key]) for key in self._files()]

    def folds_files(self) -> list[str]:
        """Its own folds file, where it has one."""
        spec = self.entry.get("folds")
        return [str(spec["file"])] if spec else []

    def _file_descriptions(self) -> dict[str, str]:
        run = {"run": "the provided TREC run"} if self.run_path is not None else {}
        return {**self._files(), **run}

    def _require(self, key: str) -> Path:
        return self._require_path(self.entry[key], key, self._file_descriptions()[key])

    def _require_path(self, path: str | os.PathLike, key: str, what: str) -> Path:
        path = Path(path)
        if path.exists():
            return path
        birch_data = data_root()
        if path.is_relative_to(birch_data) and path != birch_data:
            top = path.relative_to(birch_data).parts[0]
            where = f"put it there or set BIRCH_DATA to the folder that holds {top}/"
        else:
            where = f"put it there or change `{key}` of {self.id} in workflow/config/collections.yaml"
        raise FileNotFoundError(f"{self.id} needs {path} ({what}); {where}")

