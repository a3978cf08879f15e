"""`python -m reranker bundle RUN_DIR OUT`: a finished run's runs, evaluations and index, in one folder that
others load as it is (trec_eval, repro-eval, ranx, ir_measures), with a manifest of checksums.

Named `bundle`, not `export`: `collections export` (and the `export` stage of the run's benchmarks and
logs) already exports a collection. OUT holds:

    README.md                       what is here and how to load it
    index.md                        the run's seed index (RUN_DIR/README.md), where the run made one
    manifest.json                   every file with its sha256 and bytes, what it is; the bundle's provenance
    runs/<collection>/<run>.run     the TREC run as the stage wrote it, its ir_metadata header first
    runs/<collection>/<run>.json    the same run as {qid: {doc_id: score}}: ranx.Run.from_file, json.load
    qrels/<collection>.txt          the qrels the runs were evaluated with (gains, as evaluated)
    eval/<collection>/<name>.json   the evaluations, aggregate and per query, as `evaluate` wrote them

The `.json` twin is there because ranx 0.3.21 and ir_measures 0.4.3 read a TREC file's every line as a run
line (the header would stop them); trec_eval (9.0.8 on) and repro-eval's MetadataHandler read the `.run`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from reranker.core import run_metadata
from reranker.core.provenance import portable_name, provenance
from reranker.formats.atomic import tmp_path, write_json, write_text
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import InputError
from reranker.formats.evaluations import read_evaluation
from reranker.formats.ir_metadata import read_metadata
from reranker.formats.layout import Layout
from reranker.formats.runs import read_run
from reranker.formats.text import file_sha256

FORMAT = 1  # manifest.json's `bundle`: raised when the layout above changes

README = """# A run of birch-repro, bundled

Made by `{command}` from `{run_dir}` ({runs} runs, {evals} evaluations). `manifest.json` lists every file with
its sha256; `index.md` is the run's seed index (the source works' tables against ours), where it made one.

- `runs/<collection>/<run>.run`: TREC runs, each opening with its ir_metadata header (PRIMAD, www.ir-metadata.org,
  schema 0.1): `trec_eval` (9.0.8 on) skips it; `repro_eval.metadata.MetadataHandler(path).get_metadata()` reads
  it and `MetadataHandler.strip_metadata(path)` gives the run.
- `runs/<collection>/<run>.json`: the same run as {{qid: {{doc_id: score}}}}: `ranx.Run.from_file(path)`, or
  `json.load` for ir_measures (whose `read_trec_run` takes the header for a run line).
- `qrels/<collection>.txt`: TREC qrels, relevance as the suite's gains: `ranx.Qrels.from_file(path)`.
- `eval/<collection>/<name>.json`: `aggregate` and `per_query` values per measure, as `python -m reranker evaluate`
  wrote them.
"""


def runs_of(run_dir: Path) -> list[Path]:
    found = sorted((run_dir / "work" / "runs").glob("*/*.run"))
    if not found:
        raise InputError(f"{run_dir}: no TREC runs in work/runs/<collection>/*.run: give the folder of a finished run "
                         "(e.g. runs/default)")
    return found


def checked_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").is_file())):
        raise InputError(f"{out} exists and is no bundle (no manifest.json): give a new folder, or an earlier bundle to replace")


def bundle(run_dir: str | Path, out: str | Path, command: str) -> dict:
    """Write the bundle of `run_dir` at `out` (whole or not at all); return its manifest."""
    run_dir, out = Path(run_dir), Path(out)
    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: no such run folder")
    runs = runs_of(run_dir)
    checked_out(out)
    tmp = tmp_path(out)
    shutil.rmtree(tmp, ignore_errors=True)  # left by an interrupted bundle
    try:
        manifest = _write(tmp, run_dir, runs, command)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # nothing half-made is left beside OUT either
        raise
    if out.exists():  # an earlier bundle (checked_out): replaced whole, so that none of its files stays
        old = out.with_name(out.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        os.replace(tmp, out)
    return manifest


def _write(tmp: Path, run_dir: Path, runs: list[Path], command: str) -> dict:
    layout = Layout(str(run_dir))
    entries: list[dict] = []

    def add(source: Path | None, name: str, kind: str, **about: object) -> Path:
        target = tmp / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source is not None:
            shutil.copyfile(source, target)
        entries.append({"path": name, "kind": kind, **about})
        return target

    for path in runs:
        slug = path.parent.name
        run = read_run(path)  # a run cut short or edited is refused here, naming the file and line
        header = read_metadata(path)
        about = {"collection": slug, "run": path.stem, "ir_metadata": header is not None}
        add(path, f"runs/{slug}/{path.name}", "trec run", **about, **({"tag": header.get("tag")} if header else {}))
        target = add(None, f"runs/{slug}/{path.stem}.json", "run as JSON", **about)
        target.write_text(json.dumps(run, sort_keys=True) + "\n", encoding="utf-8")
    for slug in sorted({path.parent.name for path in runs}):
        qrels = Path(layout.path("qrels", collection=slug))
        if qrels.is_file():
            add(qrels, f"qrels/{slug}.txt", "qrels", collection=slug)
    evals = sorted((run_dir / "work" / "eval").glob("*/*.json"))
    for path in evals:
        read_evaluation(path)  # cut short or edited: refused here, naming it, not bundled as if whole
        add(path, f"eval/{path.parent.name}/{path.name}", "evaluation", collection=path.parent.name, run=path.stem)
    index = Path(layout.path("seed_index"))
    if index.is_file():
        add(index, "index.md", "seed index")
    write_text(tmp / "README.md", README.format(command=command, run_dir=portable_name(run_dir), runs=len(runs), evals=len(evals)))
    entries.append({"path": "README.md", "kind": "readme"})
    for entry in entries:
        entry.update(sha256=file_sha256(tmp / entry["path"]), bytes=(tmp / entry["path"]).stat().st_size)
    manifest = {"bundle": FORMAT, "run_dir": portable_name(run_dir), "files": entries, "provenance": provenance(command)}
    write_json(tmp / "manifest.json", manifest, indent=1)
    return manifest


@exits_on_input_error("bundle")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker bundle", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="the folder of a finished run (runs/default): its work/runs, work/eval, README.md")
    parser.add_argument("out", help="the bundle folder to write (new, or an earlier bundle to replace)")
    args = parser.parse_args(argv)
    manifest = bundle(args.run_dir, args.out, run_metadata.command_line("bundle", argv))
    kinds: dict[str, int] = {}
    for entry in manifest["files"]:
        kinds[entry["kind"]] = kinds.get(entry["kind"], 0) + 1
    print(f"{args.out}: " + ", ".join(f"{count} {kind}" for kind, count in kinds.items()), file=sys.stderr)
    return 0
