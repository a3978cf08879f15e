"""The classic SMART test collections (CACM, CISI, ...): tagged records and relevance files, plain or in a tar.gz."""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from reranker.corpora.base import Collection
from reranker.formats.docs import Doc, strip_markup
from reranker.formats.errors import FormatError
from reranker.formats.qrels import Qrels, parse_qrels
from reranker.formats.text import open_text


def _normalise_id(raw: str) -> str:
    """SMART ids with and without leading zeros name the same record (CACM qrels `01` is `.I 1`)."""
    return str(int(raw)) if raw.isdigit() else raw


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

