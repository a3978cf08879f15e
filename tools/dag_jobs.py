"""Every job of a profile's DAG as JSON: `python tools/dag_jobs.py PROFILE [--run-dir DIR] [--out FILE]`.

One `snakemake -n -p --forceall` (a dry run: seconds, nothing written but the resolved config) lists each
job's rule, outputs and shell command, and (tools/dag_trace.py) digests of its params and inputs; the run
folder, the repository and BIRCH_DATA are replaced by `{run_dir}`, `{repo}` and `{birch_data}`, so that two
checkouts on two machines give the same file. A refactor that must leave the DAG alone compares
this list with tests/data/dag/PROFILE.json: Snakemake reruns a job whose shell text, params or inputs
changed, so an identical list means that no kept run folder reruns for it (mtimes aside).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROFILES = ("default", "quick", "paper")
RULE = re.compile(r"^(?:local)?rule (\S+):$")


def dry_run(profile: str, run_dir: Path, trace: Path, configfiles: list[str] = ()) -> str:
    """The `-n -p` listing; each job's params and inputs go to `trace` (tools/dag_trace.py). `configfiles`: the
    files merged over the Snakefile's instead of the profile's (which the command line replaces)."""
    args = [sys.executable, str(REPO / "tools" / "dag_trace.py"), "-n", "-p", "--forceall", "--config", f"run_dir={run_dir}"]
    if profile != "default":
        args += ["--profile", f"workflow/profiles/{profile}"]
    if configfiles:
        args += ["--configfile", *map(str, configfiles)]
    env = {**os.environ, "DAG_TRACE_OUT": str(trace)}
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode:
        raise SystemExit(f"dag_jobs: snakemake failed for {profile}:\n{done.stderr[-3000:]}")
    return done.stdout


def parse(text: str) -> list[dict]:
    """The jobs of a `-n -p` listing: a job opens at `rule X:`; its shell command runs to the blank line."""
    jobs, job, shell = [], None, None
    for line in text.splitlines():
        if m := RULE.match(line):
            job = {"rule": m.group(1), "outputs": [], "shell": ""}
            jobs.append(job)
            shell = None
        elif job is None:
            continue
        elif shell is not None:
            if not line.strip() or line.startswith("["):
                job["shell"], shell = "\n".join(shell).rstrip(), None
            else:
                shell.append(line)
        elif line.startswith("    output: "):
            job["outputs"] = sorted(line.removeprefix("    output: ").split(", "))
        elif line.startswith("Shell command: "):
            shell = [line.removeprefix("Shell command: ")]
    if job is not None and shell is not None:
        job["shell"] = "\n".join(shell).rstrip()
    return jobs


def placeholders(run_dir: Path):
    """The run folder, the repository and BIRCH_DATA in a text as `{run_dir}`, `{repo}`, `{birch_data}`."""
    places = [(str(run_dir), "{run_dir}"), (str(REPO), "{repo}")]
    if data := os.environ.get("BIRCH_DATA"):
        places.append((str(Path(data)), "{birch_data}"))
    places.sort(key=lambda p: -len(p[0]))  # the run folder may lie inside the repository

    def plain(text: str) -> str:
        for path, name in places:
            text = text.replace(path, name)
        return text
    return plain


def normalise(jobs: list[dict], run_dir: Path, traced: list[dict] = ()) -> list[dict]:
    """Paths as placeholders; with `traced` (dag_trace's rows), each job's params and inputs as one digest each
    (the stored files stay small; a test names the jobs whose digest moved)."""
    plain = placeholders(run_dir)

    def digest(values: list[str]) -> str:
        # sorted after the placeholders: sorted absolute paths order differently on another machine
        return hashlib.sha256(json.dumps(sorted(plain(v) for v in values)).encode()).hexdigest()[:16]

    seen = {(row["rule"], *map(plain, row["outputs"])): row for row in traced}
    out = []
    for j in jobs:
        job = {"rule": j["rule"], "outputs": [plain(o) for o in j["outputs"]], "shell": plain(j["shell"])}
        if row := seen.get((job["rule"], *sorted(job["outputs"]))):
            job["params"], job["input"] = digest(row["params"]), digest(row["input"])
        out.append(job)
    return sorted(out, key=lambda j: (j["rule"], j["outputs"], j["shell"]))


def jobs(profile: str, run_dir: Path | None = None, configfiles: list[str] = ()) -> list[dict]:
    return traced_jobs(profile, run_dir, configfiles)[0]


def traced_jobs(profile: str, run_dir: Path | None = None, configfiles: list[str] = ()) -> tuple[list[dict], dict]:
    """The normalised jobs, and what the stored numbers rest on (`behind_numbers`)."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = run_dir or Path(tmp) / profile
        trace = Path(tmp) / "trace.json"
        listing = normalise(parse(dry_run(profile, run_dir, trace, configfiles)), run_dir, traced := json.loads(trace.read_text()))
        refuse_missing_data(listing)
        return listing, behind_numbers(listing, traced, run_dir)


def refuse_missing_data(listing: list[dict]) -> None:
    """A DAG that would fetch or derive the data folder's files is not the DAG a stored run was made with: every job
    downstream of those files would read as changed (and `stale.py --mark` would mark every stored number pending).
    So it stops here, naming the fix."""
    fetching = [job for job in listing if job["rule"] in ("fetch_data", "derive_data")]
    if fetching:
        print(f"dag_jobs: error: the data folder ({os.environ.get('BIRCH_DATA') or 'data/ in the checkout'}) lacks "
              f"{len(fetching)} files the DAG would fetch or derive first (e.g. {fetching[0]['outputs'][0]}), so every "
              "job behind them would read as changed: set BIRCH_DATA to the data folder, or fill it (make data)",
              file=sys.stderr)
        sys.exit(2)


# A table's numbers (named by the table) or a figure's points that claims read (named figures/<name>)
NUMBERS = re.compile(r"^\{run_dir\}/(?:numbers/([^/]+)|(figures/[^/]+))\.json$")


def behind_numbers(listing: list[dict], traced: list[dict], run_dir: Path) -> dict[str, dict[str, str]]:
    """For each numbers file a job writes ({run_dir}/numbers/<name>.json), every job it rests on: its own and each
    upstream of it through their inputs, as job (rule and first output) -> digest of its shell, params and inputs.
    Snakemake reruns a job whose digest moved, so a stored number is current while none of its jobs' did."""
    plain = placeholders(run_dir)
    inputs = {(row["rule"], *sorted(plain(o) for o in row["outputs"])): [plain(i) for i in row["input"]] for row in traced}
    maker, ident = {}, {}
    for job in listing:
        key = (job["rule"], *job["outputs"])
        name = f"{job['rule']} {job['outputs'][0]}" if job["outputs"] else job["rule"]
        body = json.dumps([job["shell"], job.get("params"), job.get("input")])
        ident[key] = (name, hashlib.sha256(body.encode()).hexdigest()[:16])
        for output in job["outputs"]:
            maker[output] = key
    out = {}
    for key in ident:
        for output in key[1:]:
            if (m := NUMBERS.match(output)) and output != "{run_dir}/figures/captions.json":
                seen, todo = set(), [key]
                while todo:
                    job = todo.pop()
                    if job not in seen:
                        seen.add(job)
                        todo += [maker[path] for path in inputs.get(job, []) if path in maker]
                out[m.group(1) or m.group(2)] = dict(sorted(ident[job] for job in seen))
    return dict(sorted(out.items()))


def commit() -> str:
    """This checkout's commit, "+dirty" where tracked files differ from it."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True).stdout
    return (head or "unknown") + ("+dirty" if dirty.strip() else "")


def made_by(run_dir: Path) -> set[str]:
    """The numbers names a run folder holds: its tables' (numbers/<name>.json) and its figures' points (figures/<name>)."""
    names = {p.stem for p in (run_dir / "numbers").glob("*.json")}
    return names | {f"figures/{p.stem}" for p in (run_dir / "figures").glob("*.json") if p.name != "captions.json"}


def merged(path: Path, record: dict, names: set[str]) -> dict:
    """The record at `path` with the entries of `names` taken from `record` (a part promoted), each entry's commit in
    `made_at` (an entry without one was made at the file's `commit`)."""
    old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"profile": record["profile"], "numbers": {}}
    made_at = {name: old.get("made_at", {}).get(name, old.get("commit")) for name in old["numbers"]}
    numbers = dict(old["numbers"])
    for name in sorted(names & record["numbers"].keys()):
        numbers[name], made_at[name] = record["numbers"][name], record["commit"]
    return {"profile": record["profile"], "commit": old.get("commit", record["commit"]),
            "made_at": dict(sorted(made_at.items())), "numbers": dict(sorted(numbers.items()))}


def dump(listing: list[dict]) -> str:
    return json.dumps(listing, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", choices=PROFILES)
    parser.add_argument("--run-dir", type=Path, help="the run folder the dry run names (default: a temporary one)")
    parser.add_argument("--out", type=Path, help="write the JSON here (default: stdout)")
    parser.add_argument("--merge-from", type=Path, help="with --behind-numbers: a part's run folder; only the numbers files it made "
                                                        "are replaced in the existing record, each with this commit (made_at)")
    parser.add_argument("--behind-numbers", type=Path, help="also write what each numbers file rests on here (its jobs' "
                                                            "digests, with this checkout's commit: tools/stale.py)")
    args = parser.parse_args(argv)
    listing, behind = traced_jobs(args.profile, args.run_dir and args.run_dir.resolve())
    if args.behind_numbers:
        record = {"profile": args.profile, "commit": commit(), "numbers": behind}
        if args.merge_from:
            record = merged(args.behind_numbers, record, made_by(args.merge_from))
        args.behind_numbers.parent.mkdir(parents=True, exist_ok=True)
        args.behind_numbers.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    text = dump(listing)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    elif not args.behind_numbers:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
