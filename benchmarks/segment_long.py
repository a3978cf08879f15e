"""The segment stage on one very long document: time linear in its length.

pysbd is quadratic in a text's length; the stage splits a title or body over the splitter's window
(20,000 characters) window by window (reranker/formats/long_text.py). Measured here: `segment --unit
sentences` (the default tokenizer, max length 128) on a docs file of one document of 10k, 100k and 1M
words, made of Cranfield's bodies one after another (repeated past its 230k words), ranked first for
Cranfield's first query: seconds (after a warm-up run on 100 words: imports, the tokenizer's first
load), seconds per 1k words, units. Beside it, on 10k and 20k words, pysbd
on the whole text against the windows: seconds, and how many sentences differ (pysbd reads list items
such as "(a)" and "1)" against the whole text's others, so a text of many documents can differ; the
open collections' documents are all under the window and split whole). Writes
results/benchmarks/segment_long.json.

    python benchmarks/segment_long.py [--words 10000 100000 1000000] [--out FILE]
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from reranker.core import hardware
from reranker.formats.atomic import write_json
from reranker.formats.segments import BOUND, SentenceSplitter, title_and_body
from reranker.stages import segment as seg

REPO = Path(__file__).resolve().parent.parent


def cranfield() -> tuple[str, str]:
    """Cranfield's bodies joined in id order, and its first query."""
    import ir_datasets

    dataset = ir_datasets.load("cranfield")
    bodies = " ".join(title_and_body(d.title, d.text)[1] for d in dataset.docs_iter())
    return bodies, " ".join(next(dataset.queries_iter()).text.split())


def words_of(text: str, count: int) -> str:
    words = text.split()
    return " ".join((words * (count // len(words) + 1))[:count])


def stage_seconds(body: str, query: str, tokenizer: str, folder: Path) -> dict[str, float | int]:
    docs, run, topics, out = (folder / name for name in ("docs.jsonl", "run.txt", "topics.tsv", "units.jsonl"))
    docs.write_text(json.dumps({"id": "long", "title": "", "text": body}) + "\n")
    run.write_text("1 Q0 long 1 1.0 bench\n")
    topics.write_text(f"1\t{query}\n")
    started = time.perf_counter()
    meta = seg.segment(docs, run, topics, out, unit="sentences", candidates=1, tokenizer=tokenizer, max_length=128)
    seconds = time.perf_counter() - started
    words = len(body.split())
    return {"words": words, "characters": len(body), "seconds": round(seconds, 2),
            "seconds_per_1k_words": round(seconds / words * 1000, 4), "units": meta["units"]}


def whole_vs_windows(body: str) -> dict[str, float | int]:
    whole, windowed = SentenceSplitter(bound=len(body)), SentenceSplitter()
    started = time.perf_counter()
    a = whole.split(body)
    middle = time.perf_counter()
    b = windowed.split(body)
    end = time.perf_counter()
    differ = sum(len(chunk) for chunk in (  # sentences of the whole split that the windows do not give
        a[i1:i2] for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
        if tag != "equal"))
    words = len(body.split())
    return {"words": words, "whole_seconds": round(middle - started, 2), "windows_seconds": round(end - middle, 2),
            "whole_seconds_per_1k_words": round((middle - started) / words * 1000, 4),
            "windows_seconds_per_1k_words": round((end - middle) / words * 1000, 4),
            "sentences": len(a), "sentences_differing": differ}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--compare-words", type=int, nargs="*", default=[10_000, 20_000],
                        help="sizes at which pysbd on the whole text is timed too")
    parser.add_argument("--tokenizer", default=seg.DEFAULT_TOKENIZER)
    parser.add_argument("--note", default="", help="e.g. what else ran on the CPU")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks" / "segment_long.json")
    args = parser.parse_args(argv)
    text, query = cranfield()
    load_before = os.getloadavg()
    folder = Path(tempfile.mkdtemp(prefix="segment-long-"))
    comparisons = [whole_vs_windows(words_of(text, n)) for n in args.compare_words]
    # Imports and the tokenizer's first load, once, on a 100-word document: not the stage's cost per document.
    warm_up = stage_seconds(words_of(text, 100), query, args.tokenizer, folder)["seconds"]
    stage = [stage_seconds(words_of(text, n), query, args.tokenizer, folder) for n in args.words]
    import pysbd
    import transformers

    result = {
        "command": "python benchmarks/segment_long.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": hardware.machine(), "note": args.note,
        "versions": {"python": platform.python_version(), "pysbd": pysbd.__version__,
                     "transformers": transformers.__version__},
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "window_characters": BOUND, "tokenizer": args.tokenizer, "max_length": 128,
        "document": "Cranfield's bodies (title removed, markup stripped) in id order, repeated past 230k words",
        "warm_up_seconds": warm_up, "segment_stage": stage,
        "per_1k_words_largest_over_smallest": round(stage[-1]["seconds_per_1k_words"] / stage[0]["seconds_per_1k_words"], 2),
        "pysbd_whole_vs_windows": comparisons,
    }
    write_json(args.out, result, indent=2)
    print(json.dumps({"segment_stage": stage, "pysbd_whole_vs_windows": comparisons}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
