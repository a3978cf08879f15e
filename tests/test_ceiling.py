"""benchmarks/rerank_ceiling.py: the most a reranker of a run's top R can reach, by the run's own qrels."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from reranker.formats.qrels import write_qrels
from reranker.formats.runs import write_run

REPO = Path(__file__).resolve().parent.parent


def test_only_relevant_documents_within_the_top_r_can_move_up(tmp_path):
    write_run({"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"a": 2.0, "b": 1.0}}, tmp_path / "bm25.run", tag="bm25")
    write_qrels({"q1": {"d3": 1}, "q2": {"a": 1}}, tmp_path / "qrels.txt")
    done = subprocess.run([sys.executable, "benchmarks/rerank_ceiling.py", "--run", str(tmp_path / "bm25.run"),
                           "--qrels", str(tmp_path / "qrels.txt"), "--depths", "2", "3", "--measures", "RR@10"],
                          cwd=REPO, capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    # q1's relevant document is third: the run and its top 2 reranked give 1/3, its top 3 reranked 1
    assert lines[2] == "| bm25 | 0.6667 |"
    assert lines[3] == "| its top 2 perfectly reranked | 0.6667 |"
    assert lines[4] == "| its top 3 perfectly reranked | 1.0000 |"
