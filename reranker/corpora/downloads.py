"""The files the suite reads that no library downloads (workflow/config/downloads.yaml): where each comes from,
its checksum and terms; fetched on first use with pooch into the data folder, checked at every use.

The data folder is `BIRCH_DATA` where it is set (a mirror of the files, as offline machines keep one), else
`data/` in the checkout: the folder the configuration's `${BIRCH_DATA:-data}` paths name. A file is one of:

- downloaded as it is (`url`): pooch streams it into a temporary file, checks its sha256 and only then moves
  it on, so an interrupted or altered download leaves nothing that a later run accepts;
- a member of a downloaded archive (`url` and `member`): the archive is fetched into `.downloads/` of the data
  folder (its own sha256 checked where the registry records it), the member copied out and checked;
- derived from other entries (`derive`): by `python -m reranker data derive` in a rule of its own.

A file's sha256 is of the content the suite reads: a .gz file's uncompressed bytes, so that a gzip header's time
and name (a mirror's copy and one made here differ there) do not count. A file reaches its place only through a
temporary file beside it, renamed once its checksum is one the registry accepts.

`BIRCH_DATA_URL` names an HTTP mirror of the data folder (the registry's paths under one base URL): every file
is then fetched from there as it is, and checked against the same sha256. The tests serve one on 127.0.0.1.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import yaml

from reranker.core.config import CONFIG_DIR, REPO_ROOT
from reranker.formats import strict_yaml
from reranker.formats.errors import ConfigError, InputError

REGISTRY = CONFIG_DIR / "downloads.yaml"
SCHEMA = REPO_ROOT / "workflow" / "schemas" / "downloads.schema.yaml"
DOWNLOADS = ".downloads"  # under the data folder: pooch's cache of archives (kept: a second member needs no download)
MIRROR_URL = "BIRCH_DATA_URL"


class DataError(InputError):
    """A data file that is missing, altered or cannot be fetched; the message names it and says how to fix it."""


@dataclass(frozen=True)
class Entry:
    """One registered file, by its path under the data folder."""

    path: str
    sha256: str
    size: int
    what: str
    licence: str
    origin: str  # the public page that describes the original
    checked: str  # how the sha256 was set against the origin
    url: str | None = None  # the file, or the archive holding it (`member`)
    member: str | None = None
    download_sha256: str | None = None  # the download's own bytes, where known
    accept: tuple = ()  # other versions taken too: ({"sha256", "why"}, ...)
    derive: Mapping = field(default_factory=dict)  # {"kind", "from", "how", ...}: made, not fetched

    @property
    def derived(self) -> bool:
        return bool(self.derive)

    @property
    def accepted(self) -> set[str]:
        return {self.sha256, *(version["sha256"] for version in self.accept)}


def data_root() -> Path:
    """The data folder, as the configuration's `${BIRCH_DATA:-data}` expands (relative to the checkout's root)."""
    return Path(os.environ.get("BIRCH_DATA") or "data")


def load_registry(path: str | os.PathLike = REGISTRY) -> dict[str, Entry]:
    """The registry's entries by path, checked against its schema."""
    import jsonschema

    try:
        document = strict_yaml.load(path) or {}
    except ConfigError as err:
        raise DataError(str(err)) from None
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        raise DataError(f"{path}: " + "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
                                                  for e in errors[:5]))
    entries = {name: Entry(path=name, **{**spec, "accept": tuple(spec.get("accept", ()))})
               for name, spec in document["files"].items()}
    for entry in entries.values():
        unknown = [source for source in entry.derive.get("from", []) if source not in entries]
        if unknown:
            raise DataError(f"{path}: {entry.path} is derived from {', '.join(unknown)}, which the registry does not list")
    return entries


def content_sha256(path: str | os.PathLike) -> str:
    """The sha256 of what the suite reads from `path`: a .gz file's uncompressed bytes, any other file's bytes."""
    digest = hashlib.sha256()
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        return f"unreadable gzip ({err})"
    return digest.hexdigest()


def verify(entry: Entry, root: Path) -> Path:
    """The entry's file, its content checked: a file that differs is one line naming it, both checksums and the fix."""
    path = root / entry.path
    found = content_sha256(path)
    if found not in entry.accepted:
        raise DataError(f"{path}: sha256 {found}, expected {entry.sha256} (workflow/config/downloads.yaml): the file "
                        f"was altered or is another version; delete it and rerun to fetch it again, or restore the "
                        f"copy BIRCH_DATA names")
    return path


def verify_present(entries: Iterable[Entry], root: Path) -> list[Path]:
    """Check every entry whose file is in the data folder (those missing are fetched by their rules); the checked paths."""
    return [verify(entry, root) for entry in entries if (root / entry.path).exists()]


def mirror_url() -> str | None:
    """`BIRCH_DATA_URL`: an HTTP mirror of the data folder, every file (derived ones too) fetched from there as it is."""
    return (os.environ.get(MIRROR_URL) or "").rstrip("/") or None


def needed(config: Mapping, registry: Mapping[str, Entry], root: Path) -> list[Entry]:
    """The registered files a resolved configuration reads: every string in it that names a path under the data
    folder, and, where a derived one is missing and no mirror serves it, what it is derived from."""
    prefix = os.path.normpath(root) + "/"
    named: dict[str, None] = {}

    def walk(value: object) -> None:
        if isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and os.path.normpath(value).startswith(prefix):
            named[os.path.normpath(value)[len(prefix):]] = None

    walk(config)
    unknown = [name for name in named if name not in registry]
    if unknown:
        raise DataError(f"the configuration reads {', '.join(prefix + n for n in unknown)}, which "
                        f"workflow/config/downloads.yaml does not list: add its origin, sha256 and licence there")
    out: dict[str, Entry] = {}

    def add(name: str) -> None:
        entry = out[name] = registry[name]
        if entry.derived and not mirror_url() and not (root / name).exists():
            for source in entry.derive["from"]:
                add(source)

    for name in named:
        add(name)
    return list(out.values())


def fetch(entry: Entry, root: Path, progress: bool = True) -> Path:
    """Download `entry` into the data folder, from its origin or from `BIRCH_DATA_URL` where set, and check it."""
    import pooch
    import requests

    mirror = mirror_url()
    if entry.derived and not mirror:
        raise DataError(f"{entry.path} is derived, not downloaded: python -m reranker data derive --path {entry.path}")
    target = root / entry.path
    url = f"{mirror}/{entry.path}" if mirror else entry.url
    member = None if mirror else entry.member
    direct = not member and not entry.path.endswith(".gz")  # the download is the content: pooch puts it in place itself
    if direct:
        known, where, name = f"sha256:{entry.sha256}", target.parent, target.name
    else:
        own = None if mirror else entry.download_sha256
        known, where = (f"sha256:{own}" if own else None), root / DOWNLOADS
        name = Path(url.split("?")[0]).name if member else entry.path.replace("/", "--")
    try:
        fetched = Path(pooch.retrieve(url, known_hash=known, fname=name, path=where, progressbar=progress))
    except requests.RequestException as err:
        raise DataError(f"{target}: could not download {url} ({type(err).__name__}); offline, set BIRCH_DATA to a folder "
                        f"that holds {entry.path}") from None
    except ValueError as err:  # pooch: the checksum differs; it deleted the download
        raise DataError(f"{target}: the download from {url} was refused, nothing kept: {' '.join(str(err).split())}") from None
    if member:
        _extract(fetched, member, entry, target)
    elif direct:
        _as_umask_allows(fetched)
    else:
        with fetched.open("rb") as source:
            _place(source, entry, target)
        fetched.unlink()  # a file, not an archive: kept once, at its place
    return verify(entry, root)


def _extract(archive: Path, member: str, entry: Entry, target: Path) -> None:
    """Copy one member out of a tar or zip archive into place, checked before it gets there. The member is named as
    the registry names it, or with a leading folder or ./ (archives differ there)."""
    def pick(names: list[str]) -> str:
        exact = [n for n in names if n == member or n.removeprefix("./") == member]
        nested = [n for n in names if n.endswith("/" + member)]
        found = exact or nested
        if len(found) != 1:
            raise DataError(f"{archive}: {'no member' if not found else 'several members'} {member} "
                            f"(workflow/config/downloads.yaml names it)")
        return found[0]

    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zipped, zipped.open(pick(zipped.namelist())) as source:
            _place(source, entry, target)
    else:
        with tarfile.open(archive) as tarred:
            source = tarred.extractfile(pick(tarred.getnames()))
            if source is None:
                raise DataError(f"{archive}: {member} is not a file in it")
            _place(source, entry, target)


def _place(source: BinaryIO, entry: Entry, target: Path) -> None:
    """Write `source` into a temporary file beside `target` and rename it into place only if its content is a version
    the registry accepts: a refused or interrupted copy leaves nothing at `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=target.suffix,
                                     delete=False) as out:
        try:
            for block in iter(lambda: source.read(1 << 20), b""):
                out.write(block)
        except BaseException:
            os.unlink(out.name)
            raise
    found = content_sha256(out.name)
    if found not in entry.accepted:
        os.unlink(out.name)
        raise DataError(f"{target}: refused, sha256 {found}, expected {entry.sha256} (workflow/config/downloads.yaml): "
                        f"the source holds another version; nothing was written")
    _as_umask_allows(Path(out.name))
    os.replace(out.name, target)


def _as_umask_allows(path: Path) -> None:
    """A temporary file is made private (0600); the file it becomes is readable as any other the user makes."""
    mask = os.umask(0)
    os.umask(mask)
    path.chmod(0o666 & ~mask)


# How a derived file is made from its sources: each kind a function of (entry, the sources' paths) -> bytes.
def _gzip(data: bytes) -> bytes:
    """gzip without a name or time in its header, so the bytes depend on the content alone."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as zipped:
        zipped.write(data)
    return buffer.getvalue()


def _gzip_of(entry: Entry, sources: list[Path]) -> bytes:
    (source,) = sources
    return _gzip(source.read_bytes())


def _trec_run_from_folds(entry: Entry, sources: list[Path]) -> bytes:
    """Fold runs (`qid Q0 docid rank score tag`, any whitespace) joined in order, the ids' prefixes stripped, ranks
    up to `depth` kept, scores as written, the tag replaced."""
    spec = entry.derive
    lines = []
    for source in sources:
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 6 or not fields[3].isdigit():
                raise DataError(f"{source}:{number}: not a TREC run line (qid Q0 docid rank score tag)")
            qid, _, docid, rank, score, _ = fields
            if int(rank) <= spec["depth"]:
                qid, docid = qid.removeprefix(spec.get("strip_query_prefix", "")), docid.removeprefix(spec.get("strip_doc_prefix", ""))
                lines.append(f"{qid} Q0 {docid} {rank} {score} {spec['tag']}\n")
    text = "".join(lines).encode("utf-8")
    return _gzip(text) if entry.path.endswith(".gz") else text


FOLD_ARRAY = re.compile(r"(test|train)_index_fold(\d+)\.npy$")


def _folds_from_npy(entry: Entry, sources: list[Path]) -> bytes:
    """Per fold, arrays of 0-based query positions (`{test,train}_index_fold<k>.npy`) as query ids (position + 1):
    {"fold<k>": {"test_qids": [...in file order], "train_qids": [...sorted]}}, JSON with a one-space indent."""
    import numpy as np

    folds: dict[str, dict[str, list[str]]] = {}
    for source in sources:
        match = FOLD_ARRAY.search(source.name)
        if match is None:
            raise DataError(f"{source}: not a fold array ({{test,train}}_index_fold<k>.npy)")
        positions = [int(x) for x in np.load(source, allow_pickle=False)]
        kind, fold = match.groups()
        folds.setdefault(f"fold{fold}", {})[f"{kind}_qids"] = [str(x + 1) for x in (sorted(positions) if kind == "train" else positions)]
    ordered = {name: {"test_qids": folds[name]["test_qids"], "train_qids": folds[name]["train_qids"]}
               for name in sorted(folds, key=lambda n: int(n.removeprefix("fold")))}
    return json.dumps(ordered, indent=1).encode("utf-8")


DERIVATIONS = {"gzip": _gzip_of, "trec_run_from_folds": _trec_run_from_folds, "folds_from_npy": _folds_from_npy}


def derive(entry: Entry, registry: Mapping[str, Entry], root: Path) -> Path:
    """Make a derived entry from its sources (each checked first) and put it in place, checked before it gets there."""
    sources = [verify(registry[name], root) for name in entry.derive["from"]]
    _place(io.BytesIO(DERIVATIONS[entry.derive["kind"]](entry, sources)), entry, root / entry.path)
    return root / entry.path
