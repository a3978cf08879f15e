"""Collections through ir_datasets (an id, optionally with local NIST topics / TREC qrels files)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path

from reranker.core.config import ConfigError
from reranker.corpora.base import Collection, DocumentsUnavailableError
from reranker.formats.atomic import file_lock
from reranker.formats.docs import Doc, strip_markup
from reranker.formats.errors import FormatError, InputError
from reranker.formats.qrels import Qrels, read_qrels
from reranker.formats.topics import read_trec_topics


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
        if self.run_only:
            return None
        with self._downloads():
            return self.dataset.docs_count()

    @contextmanager
    def _downloads(self):
        """ir_datasets downloads what its cache lacks on first use; offline, with an empty or partial cache, every
        source fails in a RuntimeError listing each URL. One line instead: what is missing, where, and the fix."""
        try:
            yield
        except RuntimeError as error:
            if not (error.args and error.args[0] == "All download sources failed"):
                raise
            import ir_datasets

            tried = [getattr(source, "url", str(source)) for source, _ in (error.args[1] if len(error.args) > 1 else [])]
            raise InputError(
                f"{self.id}: ir_datasets {self.dataset_id} is not in its cache (IR_DATASETS_HOME="
                f"{ir_datasets.util.home_path()}) and no download source answered ({', '.join(tried) or 'none listed'}): "
                f"go online once, or copy a cache that holds it there (make setup copies IR_DATASETS_MIRROR)") from error

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
            with self._downloads():
                for record in self.dataset.docs_iter():
                    yield self._doc(record)
        except FileNotFoundError as error:
            expected = error.filename or (error.args[0] if error.args else "?")
            obtain = "They are licensed: obtain" if self.entry["licensed"] else "Obtain"
            raise DocumentsUnavailableError(
                f"{self.id}: ir_datasets cannot find the documents of {self.dataset_id} at {expected}. "
                f"{obtain} them (see {self._access_url()}) and put them there (IR_DATASETS_HOME sets the "
                f"folder), or set `run_only: true` for {self.id} to use its queries, qrels and run only") from error

    def missing_documents(self) -> str | None:
        """Where the documents are not in ir_datasets' cache (licensed ones, which ir_datasets never downloads): one
        line saying where it looks for them and how to get them; None where they are there or not used (run-only).
        Read from the dataset's download object without starting a download."""
        if self.run_only or not self.entry["licensed"]:
            return None
        handler = self.dataset.docs_handler()
        download = getattr(handler, "_docs_dlc", None) or getattr(handler, "_dlc", None)
        if download is None or not hasattr(download, "path"):
            return None  # a layout this probe does not know: the export job says what is missing
        expected = Path(download.path(force=False))
        if expected.exists():
            return None
        return (f"{self.id}: ir_datasets {self.dataset_id} reads its documents from {expected}, which is missing: they "
                f"are licensed; obtain them ({self._access_url()}) and put them there (IR_DATASETS_HOME sets the folder), "
                f"or set `run_only: true` for {self.id}")

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
        with self._downloads():
            return {query.query_id: " ".join(getattr(query, attribute).split()) for query in self.dataset.queries_iter()}

    def _read_qrels(self) -> Qrels:
        if self.entry.get("qrels"):
            return read_qrels(self._require("qrels"))
        qrels: Qrels = {}
        with self._downloads():
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

