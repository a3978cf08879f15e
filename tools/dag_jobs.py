"""Every job of a profile's DAG as JSON: `python tools/dag_jobs.py PROFILE [--run-dir DIR] [--out FILE]`.

One `snakemake -n -p --forceall` (a dry run: seconds, nothing written but the resolved config) lists each
job's rule, outputs and shell command, and (tools/dag_trace.py) digests of its params and inputs; the run
folder, the repository and BIRCH_DATA are replaced by `{run_dir}`, `{repo}` and `{birch_data}`, so that two
checkouts on two machines give the same file. A refactor that must leave the DAG alone (issue 61) compares
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


def normalise(jobs: list[dict], run_dir: Path, traced: list[dict] = ()) -> list[dict]:
    """Paths as placeholders; with `traced` (dag_trace's rows), each job's params and inputs as one digest each
    (the stored files stay small; a test names the jobs whose digest moved)."""
    places = [(str(run_dir), "{run_dir}"), (str(REPO), "{repo}")]
    if data := os.environ.get("BIRCH_DATA"):
        places.append((str(Path(data)), "{birch_data}"))
    places.sort(key=lambda p: -len(p[0]))  # the run folder may lie inside the repository

    def plain(text: str) -> str:
        for path, name in places:
            text = text.replace(path, name)
        return text

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
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = run_dir or Path(tmp) / profile
        trace = Path(tmp) / "trace.json"
        listing = parse(dry_run(profile, run_dir, trace, configfiles))
        return normalise(listing, run_dir, json.loads(trace.read_text()))


def dump(listing: list[dict]) -> str:
    return json.dumps(listing, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", choices=PROFILES)
    parser.add_argument("--run-dir", type=Path, help="the run folder the dry run names (default: a temporary one)")
    parser.add_argument("--out", type=Path, help="write the JSON here (default: stdout)")
    args = parser.parse_args(argv)
    text = dump(jobs(args.profile, args.run_dir and args.run_dir.resolve()))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
