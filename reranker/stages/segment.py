"""Split a run's top-K documents into scoring units: pysbd sentences (Birch) or word passages.

`sentences`: the title and the body of each document are split into sentences by pysbd 0.3.4, the
rule-based splitter that scores best on its Golden Rules set. Whitespace is collapsed first, because
pysbd treats every line break as a boundary (Cranfield's text is hard-wrapped), and pieces without
a word character (Cranfield's stray " .") are dropped. pysbd is quadratic in a text's length: a
title or body over 20,000 characters (none in the open collections) is split in windows of that size,
stitched at pysbd's own boundaries (reranker/formats/long_text.py), so a 1M-word document takes
minutes, not hours. A sentence too long
to fit beside the longest query in the model's max length is cut into consecutive word windows,
each within `max_length - longest query tokens - 3` tokens under the model's tokenizer (a query
counts at most half of `max_length`; longer queries are truncated by the scorer instead), so the
scorer never truncates a sentence.

`passages`: fixed word windows (Dai & Callan 2019): `length` words every `stride` words, each
prefixed by the title unless `title=False`; the scorer truncates them at its max length.

Output: JSONL `{"doc_id", "unit", "text"}` sorted by doc_id then unit (0, 1, ...), every document
of the run's top-K once, at least one unit per document (an empty document gets one empty unit,
so that every candidate keeps a score). A sidecar `<out>.meta.json` records the splitter and its
version, K, the token budget, the tokenizer and the checksums of the inputs. Identical inputs give
byte-identical outputs.

Each unit is one builder (`BUILDERS`, keyed by the registry's names) of the function that cuts a
document into units.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from tqdm import tqdm

from reranker.core import registry
from reranker.core.arguments import add_config, add_files
from reranker.core.flags import overlay
from reranker.formats.atomic import write_json
from reranker.formats.docs import read_docs
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import FormatError, InputError
from reranker.formats.runs import read_run, top_k_docs
from reranker.formats.segments import SentenceSplitter, Unit, count_tokens, passage_units, sentence_units, title_and_body, write_segments
from reranker.formats.sidecar import describe
from reranker.formats.text import file_sha256, meta_path
from reranker.formats.topics import read_topics_tsv

UNITS = tuple(registry.UNITS)
SPECIAL_TOKENS = 3  # [CLS] query [SEP] text [SEP]
# The bert-base-uncased WordPiece vocabulary, which every configured checkpoint uses.
DEFAULT_TOKENIZER = "sentence-transformers/all-MiniLM-L6-v2"
MIN_BUDGET = 8


def token_budget(tokenizer: Any, queries: Iterable[str], max_length: int) -> int:
    """Tokens left for a unit: max_length - 3 special tokens - the longest query, counted at most to
    half the pair.

    A query longer than half (CISI has queries of up to ~380 tokens) is cut by the scorer's
    `longest_first` truncation, which trims the longer side first; with units of at most half the
    pair, that side is always the query, so a unit is never truncated.
    """
    half = -(-(max_length - SPECIAL_TOKENS) // 2)  # ceil: units get the floor
    lengths = [count_tokens(tokenizer, q) for q in queries]
    longest = max(lengths, default=0)
    budget = max_length - min(longest, half) - SPECIAL_TOKENS
    if budget < MIN_BUDGET:
        raise InputError(f"max_length {max_length} leaves {budget} tokens for text beside a {longest}-token query; "
                         f"raise --max-length")
    cut = sum(length > max_length - SPECIAL_TOKENS - budget for length in lengths)
    if cut:
        print(f"segment: {cut} of {len(lengths)} queries are longer than {max_length - SPECIAL_TOKENS - budget} tokens "
              f"(longest {longest}); the scorer truncates those queries, never a unit", file=sys.stderr)
    return budget


class Cut(NamedTuple):
    """What a unit builder may read: the run's query ids (in run order), their texts, and segment()'s settings."""

    qids: Iterable[str]
    topics: Mapping[str, str]  # query id -> text, for every query of the run
    tokenizer: str
    max_length: int
    passage_length: int
    passage_stride: int
    passage_title: bool


UnitsOf = Callable[[str, str, str], list[Unit]]  # (doc_id, title, body) -> the document's units


def _sentences(cut: Cut, meta: dict[str, Any]) -> UnitsOf:
    from reranker.neural.models import load_tokenizer

    tok = load_tokenizer(cut.tokenizer)
    budget = token_budget(tok, (cut.topics[qid] for qid in cut.qids), cut.max_length)
    splitter = SentenceSplitter()
    meta.update(splitter={"name": splitter.name, "version": splitter.version, "language": splitter.language,
                          "window": splitter.bound},
                tokenizer=cut.tokenizer, max_length=cut.max_length, token_budget=budget)
    return lambda doc_id, title, body: sentence_units(doc_id, title, body, splitter, tok, budget)


def _passages(cut: Cut, meta: dict[str, Any]) -> UnitsOf:
    meta.update(passages={"length": cut.passage_length, "stride": cut.passage_stride, "title": cut.passage_title})
    return lambda doc_id, title, body: passage_units(doc_id, title, body, cut.passage_length, cut.passage_stride,
                                                     cut.passage_title)


def _documents(cut: Cut, meta: dict[str, Any]) -> UnitsOf:
    return lambda doc_id, title, body: [Unit(doc_id, 0, f"{title} {body}".strip())]


# One builder per name of registry.UNITS (tests/test_registry.py holds the two lists together): it
# records its settings in the meta and returns the cutter.
BUILDERS: dict[str, Callable[[Cut, dict[str, Any]], UnitsOf]] = {
    "sentences": _sentences,
    "passages": _passages,
    "documents": _documents,
}


def segment(docs_path: str | os.PathLike, run_path: str | os.PathLike, topics_path: str | os.PathLike,
            out: str | os.PathLike, unit: str = "sentences", candidates: int = 100,
            tokenizer: str = DEFAULT_TOKENIZER, max_length: int = 128,
            passage_length: int = 150, passage_stride: int = 100, passage_title: bool = True) -> dict[str, Any]:
    """Segment the top-`candidates` documents of a run; write `out` and `<out>.meta.json`; return the meta."""
    if unit not in UNITS:
        raise InputError(f"unit must be one of {', '.join(UNITS)}, not {unit!r}")
    if candidates < 1 or passage_length < 1 or passage_stride < 1:
        raise InputError("candidates, passage length and passage stride must be positive")
    run = read_run(run_path)
    topics = read_topics_tsv(topics_path)
    missing_topics = sorted(set(run) - topics.keys())
    if missing_topics:
        raise FormatError(topics_path, None, f"no text for {len(missing_topics)} queries of the run, e.g. {missing_topics[:5]}")
    wanted = {doc for docs in top_k_docs(run, candidates).values() for doc in docs}
    docs = read_docs(docs_path, wanted, require_text=True)

    meta: dict[str, Any] = {"unit": unit, "candidates": candidates, "documents": len(docs),
                            "inputs": {name: {"path": str(p), "sha256": file_sha256(p)} for name, p in
                                       (("docs", docs_path), ("run", run_path), ("topics", topics_path))}}
    cut = Cut(run.keys(), topics, tokenizer, max_length, passage_length, passage_stride, passage_title)
    units_of = BUILDERS[unit](cut, meta)

    units: list[Unit] = []
    for doc_id in tqdm(sorted(docs), desc=f"segment {unit}", unit="doc", file=sys.stderr):
        units.extend(units_of(doc_id, *title_and_body(*docs[doc_id])))
    meta["units"] = len(units)
    write_segments(units, out)
    meta["output"] = describe(out)  # what score checks before it trusts the file
    write_json(meta_path(out), meta, indent=2, sort_keys=True)
    return meta


@exits_on_input_error("segment")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker segment", description=__doc__.split("\n\n")[0])
    add_files(parser, "docs", "run", "topics", "out", out="output JSONL")
    parser.add_argument("--unit", choices=UNITS, default="sentences")
    add_config(parser, "segment (its tokenizer: segment.tokenizer, which the resolved configuration fills)")
    parser.add_argument("--section", help="a configuration section (radboud, ntnu) whose candidates K, passages and "
                        "tokenizer replace segment:'s")
    parser.add_argument("--candidates", type=int, help="segment the run's top K (default: the settings')")
    args = parser.parse_args(argv)
    from reranker.core import settings as stage_settings
    from reranker.core.config import load_config

    config = load_config(args.config)
    settings = stage_settings.segment(config, args.section)
    settings = overlay(settings, args, {"--candidates": stage_settings.replaced(config, args.section, "candidates", "segment")})
    tokenizer, candidates, passages = settings["tokenizer"] or DEFAULT_TOKENIZER, settings["candidates"], settings["passages"]
    meta = segment(args.docs, args.run, args.topics, args.out, unit=args.unit, candidates=candidates,
                   tokenizer=tokenizer, max_length=settings["max_length"], passage_length=passages["length"],
                   passage_stride=passages["stride"], passage_title=passages["title"])
    print(f"{meta['units']} {args.unit} from {meta['documents']} documents -> {args.out}", file=sys.stderr)
    return 0
