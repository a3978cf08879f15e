"""ir_metadata (Breuer et al., SIGIR 2022; www.ir-metadata.org): a run's PRIMAD record in a `#` header.

The header opens the run file and is YAML, every line behind `# `:

    # ir_metadata.start
    # schema-version: '0.1'
    # tag: bm25
    # platform: ...
    # ir_metadata.end
    1 Q0 d1 1 12.5 bm25

as repro-eval's `MetadataHandler.read_metadata` reads it (0.5.0: the first line must be the start mark; each
line up to the end mark, its `#` stripped, is YAML). trec_eval (9.0.8 on) skips lines starting with `#`, and so
does every reader of runs here (reranker.formats.runs); ir_measures 0.4.3's `read_trec_run` and pytrec_eval's
`parse_run` do not (tests/test_ir_metadata.py): hand them the run as our reader gives it, or the file less
its `#` lines.

The header is ASCII (YAML escapes the rest), so that a reader that opens the file in its locale's encoding
reads it as well as one that opens it as UTF-8.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import yaml

from reranker.formats.errors import FormatError
from reranker.formats.text import text_lines

START = "# ir_metadata.start"
END = "# ir_metadata.end"
SCHEMA_VERSION = "0.1"
PRIMAD = ("platform", "research goal", "implementation", "method", "actor", "data")


def header(metadata: Mapping[str, Any]) -> str:
    """The header's lines, each ending in `\\n`: `metadata` after the schema version, in its own order."""
    record = {"schema-version": SCHEMA_VERSION, **metadata}
    text = yaml.safe_dump(record, sort_keys=False, allow_unicode=False, width=1 << 20, default_flow_style=False)
    return "".join(f"# {line}\n" for line in [START[2:], *text.splitlines(), END[2:]])


def run_body(path: str | os.PathLike) -> bytes:
    """A run file's bytes without its header's `#` lines: what two runs of one stage share, where the header's
    command and resources differ."""
    with open(path, "rb") as f:
        return b"".join(line for line in f if not line.startswith(b"#"))


def read_metadata(path: str | os.PathLike) -> dict | None:
    """The header of a run file as a mapping; None where the file opens without one. A header that is not
    YAML, or never ends, is a FormatError naming the line."""
    lines: list[str] = []
    start = None
    for line_no, line in text_lines(path):
        if start is None:
            if line.strip() != START:
                return None
            start = line_no
        elif line.strip() == END:
            break
        elif line.startswith("#"):
            lines.append(line[1:])
        else:
            raise FormatError(path, line_no, f"the ir_metadata header opened on line {start} ends without "
                                             f"`{END}`: close it before the run lines")
    else:
        if start is None:
            return None
        raise FormatError(path, start, f"the ir_metadata header never ends with `{END}`")
    try:
        found = yaml.safe_load("\n".join(lines))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise FormatError(path, start + 1 + mark.line if mark else start,
                          f"the ir_metadata header is not YAML ({getattr(err, 'problem', None) or err}): "
                          "write the run again") from None
    if not isinstance(found, dict):
        raise FormatError(path, start, "the ir_metadata header is not a YAML mapping: write the run again")
    return found
