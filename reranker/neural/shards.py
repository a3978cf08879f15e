"""Scoring cut into shards and parts: the plan, the shard folder, and the gather of parts.

A shard is a block of whole queries (about `shard_size` pairs), written to `<out>.shards/` when it is
scored, so that a killed run resumes at the shards still missing; the folder's `plan.json` names the
inputs its shards belong to. Each shard's sha256 is written beside it (`shard-00000.tsv.sha256`) before
the whole shard is renamed into place, and checked when a run resumes: a shard that no longer matches, or has no
checksum (killed between the two, or written by an older version), is scored again, not trusted, and
the event said on stderr and counted (score's meta: `shards_rejected`). Shards are a cache of work
done, so recomputing them is the cure; it costs time, never a wrong score.

A part (`--part I/N`) is the I-th of N contiguous blocks of shards, so that one collection spreads
over N jobs (a cluster's nodes); `gather_parts` joins their files in part order, and the result
equals an unsharded run's byte for byte. Each part is checked against its sidecar first. `join_runs`
joins whole runs of disjoint queries (a fold's checkpoint scores its test queries) as `cat` would,
each checked the same way, and records the whole in a sidecar of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from reranker.core.hardware import combine_usage
from reranker.formats.atomic import write_json, write_text
from reranker.formats.errors import InputError
from reranker.formats.sidecar import check_sidecar
from reranker.formats.text import file_sha256, meta_path
from reranker.formats.unit_scores import join_unit_scores


class Pair(Protocol):
    """What the plan reads of a scored pair (score's UnitPair): its query's id, and what its score depends on."""

    @property
    def qid(self) -> str: ...
    @property
    def doc_id(self) -> str: ...
    @property
    def unit(self) -> int: ...
    @property
    def query(self) -> str: ...
    @property
    def text(self) -> str: ...


def shard_dir(out: str | os.PathLike) -> Path:
    return Path(str(out) + ".shards")


def plan_digest(pairs: Sequence[Pair], context: Sequence[Any], shard_size: int) -> str:
    """What a shard's bytes depend on: every pair in order, the model's context, the shard size."""
    digest = hashlib.sha256(json.dumps([*context, shard_size]).encode())
    for pair in pairs:
        digest.update(f"{pair.qid}\t{pair.doc_id}\t{pair.unit}\t{pair.query}\t{pair.text}\n".encode())
    return digest.hexdigest()


def prepare_shards(directory: Path, plan: str) -> None:
    """Keep shards of the same plan; shards of another plan (other pairs or model) are discarded."""
    plan_file = directory / "plan.json"
    if directory.exists():
        previous = json.loads(plan_file.read_text()).get("plan") if plan_file.exists() else None
        if previous == plan:
            return
        print(f"score: {directory} holds shards of other inputs; starting over", file=sys.stderr)
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    write_text(plan_file, json.dumps({"plan": plan}) + "\n")


def seal_shard(built: Path, shard: Path) -> None:
    """Publish a shard built at `built`: its sha256 is written beside `shard` first, then the shard is
    renamed into place, so a shard is never visible without the checksum a resumed run trusts (a kill
    between the two leaves a checksum with no shard, which is scored again like any missing shard)."""
    write_text(shard.with_name(shard.name + ".sha256"), file_sha256(built) + "\n")
    os.replace(built, shard)


def shards_to_score(files: dict[int, Path]) -> tuple[list[int], int]:
    """The shards (indices, in order) a resumed run must score, and how many of them were on disk but rejected.

    A shard is reused only when its checksum file holds its sha256."""
    todo, rejected = [], 0
    for index, shard in files.items():
        seal = shard.with_name(shard.name + ".sha256")
        if not shard.exists():
            todo.append(index)
            continue
        if not seal.exists():
            why = "has no checksum (written by an older version, or killed before its checksum)"
        elif seal.read_text().strip() != file_sha256(shard):
            why = "does not match its checksum (changed after it was written)"
        else:
            continue
        print(f"score: {shard} {why}: scoring it again", file=sys.stderr)
        todo.append(index)
        rejected += 1
    return todo, rejected


def plan_shards(pairs: Sequence[Pair], shard_size: int) -> list[tuple[int, int]]:
    """[start, end) of each shard: whole queries, closed before a query would take it past `shard_size`.

    A query with more pairs than `shard_size` is a shard of its own. Keeping a query's pairs together
    keeps each repeated (query, unit) text inside one shard, so shards never depend on each other.
    """
    if shard_size < 1:
        raise InputError("shard size must be positive")
    bounds: list[tuple[int, int]] = []
    start = query_start = 0
    for index in range(1, len(pairs) + 1):
        if index < len(pairs) and pairs[index].qid == pairs[index - 1].qid:
            continue
        if index - start > shard_size and query_start > start:  # this query would overflow the shard
            bounds.append((start, query_start))
            start = query_start
        query_start = index
    bounds.append((start, len(pairs)))
    return bounds


def parse_part(text: str) -> tuple[int, int]:
    """`I/N` (1 <= I <= N) -> (I, N)."""
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError:
        raise InputError(f"--part must be I/N, such as 2/8; found {text!r}") from None
    if not 1 <= index <= count:
        raise InputError(f"--part {text}: I must be between 1 and N")
    return index, count


def part_range(n_shards: int, part: tuple[int, int]) -> range:
    """The shards of part I of N: the I-th of N contiguous, near-equal blocks (possibly empty)."""
    index, count = part
    return range((index - 1) * n_shards // count, index * n_shards // count)


class GatherError(InputError):
    """Parts that do not make up one whole run."""


def gather_parts(parts: Sequence[str | os.PathLike], out: str | os.PathLike) -> dict[str, Any]:
    """Concatenate the parts of a sharded score run, in part order, into `out`; write and return its meta.

    Each part's meta must say it is part I of the same N, of the same plan, and every part must be there:
    a missing or foreign part fails before anything is written.
    """
    metas = []
    for path in parts:
        if not Path(path).exists() or not meta_path(path).exists():
            raise GatherError(f"part {path} (or its .meta.json) does not exist; score it first")
        metas.append(check_sidecar(path))
    if not metas:
        raise GatherError("no parts given")
    count = len(metas)
    order: dict[int, tuple[str | os.PathLike, dict[str, Any]]] = {}  # I -> (path, meta)
    for path, meta in zip(parts, metas):
        index, n = parse_part(meta.get("part", "1/1"))
        if n != count:
            raise GatherError(f"{path} is part {index}/{n}, but {count} parts were given")
        if index in order:
            raise GatherError(f"{path} and {order[index][0]} are both part {index}/{n}")
        order[index] = (path, meta)
    same = ("fingerprint", "kind", "dtype", "max_length", "candidates", "shard_size", "plan_shards", "plan_pairs")
    for key in same:
        values = {json.dumps(meta.get(key)) for meta in metas}
        if len(values) > 1:
            raise GatherError(f"the parts disagree on {key} ({', '.join(sorted(values))}): not one run")
    ordered = [order[i] for i in range(1, count + 1)]
    output = join_unit_scores([path for path, _ in ordered], out)
    first = {k: v for k, v in ordered[0][1].items() if k not in ("part", "first_shard", "plan_shards", "plan_pairs")}
    summed = {key: sum(meta.get(key, 0) for _, meta in ordered)  # an older part has no *_rejected
              for key in ("pairs", "shards", "shards_resumed", "shards_rejected", "cache_hits", "cache_rejected",
                          "scored", "model_seconds", "seconds")}
    meta = {**first, **summed, "output": output, "parts": [str(path) for path, _ in ordered],
            "seconds": round(summed["seconds"], 3),
            "device_usage": combine_usage([meta.get("device_usage") for _, meta in ordered])}
    meta["pairs_per_second"] = round(meta["pairs"] / meta["seconds"], 1) if meta["seconds"] else None
    meta["model_pairs_per_second"] = round(meta["scored"] / meta["model_seconds"], 1) if meta["scored"] else None
    write_json(meta_path(out), meta, indent=2, sort_keys=True)
    return meta


def refuse_shared_queries(parts: Sequence[str | os.PathLike]) -> None:
    """A GatherError when two runs to join score one query: joined, the query's pairs would be read twice."""
    owner: dict[str, str | os.PathLike] = {}
    for path in parts:
        with open(path, encoding="utf-8", errors="replace") as f:
            qids = {line.split("\t", 1)[0] for line in f if line.strip()} - {"qid"}
        shared = sorted(qids & owner.keys())
        if shared:
            raise GatherError(f"{path} and {owner[shared[0]]} both score query {shared[0]} ({len(shared)} shared): "
                              "join runs of disjoint queries (one per fold), each once")
        owner.update(dict.fromkeys(qids, path))


def join_runs(parts: Sequence[str | os.PathLike], out: str | os.PathLike) -> dict[str, Any]:
    """Concatenate whole score runs (each its own sidecar's, e.g. one per fold) in the order given into `out`, the
    bytes `cat` makes; write and return its meta: the parts, their pairs, and `output` for its readers. `joined`
    marks it a file of runs counted on their own (reranker.report.run_records counts each run's time once)."""
    metas = []
    for path in parts:
        meta = check_sidecar(path) if Path(path).exists() else None
        if meta is None:
            raise GatherError(f"{path} (or its .meta.json) does not exist; score it first")
        metas.append(meta)
    refuse_shared_queries(parts)
    output = join_unit_scores(parts, out)
    meta = {"joined": [str(path) for path in parts], "pairs": sum(meta.get("pairs", 0) for meta in metas),
            "output": output}
    write_json(meta_path(out), meta, indent=2, sort_keys=True)
    return meta
