"""The score cache: `scores.sqlite`, every logit of a scored (query, unit) pair under a content key.

One table, `logits (key BLOB PRIMARY KEY, logits BLOB, checksum BLOB)`: the key is the first 16 bytes
of the SHA-256 of the JSON list `[*context, query, text]` (context: what the logits depend on besides
the two texts, such as the model's fingerprint, dtype and max length), the value the pair's logits as
float32 bytes, the checksum the first 8 bytes of the SHA-256 of key and value. SQLite in WAL mode with
a busy timeout, so that processes and experiments share one cache (a run folder's work/cache/scores)
and a pair is scored once.

A row is served only when its checksum matches: SQLite's own integrity check passes a value changed in
place (one flipped byte turned a logit of -0.0201 into -3e-7). The cache is a cache, so a row that
fails, or has no checksum (an older cache, whose table gains the column on open), is recomputed
rather than refused: `get` leaves it out, as a miss, says so on stderr and counts it in `rejected`
(score's meta: `cache_rejected`), and the next `put` of its key replaces it.

A full disk is an OSError (ENOSPC) naming the cache, one line as for any output (formats.errors). SQLite
says "database or disk is full" where its database or log cannot grow, but only "disk I/O error"
(SQLITE_IOERR_SHMSIZE) where its shared-memory file cannot: an I/O error with under 1 MiB free counts too.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

LOW_SPACE = 1 << 20  # bytes free, below which SQLite's I/O error is taken for a full disk


class ScoreCache:
    """Content-addressed logits in SQLite (WAL, busy timeout), shared by processes and experiments.

    A row holds every logit of a pair, so the rankings read from one head (a grade level, argmax)
    score each pair once. `rejected`: rows left out by `get` since this cache was opened, their
    checksum failed or absent.
    """

    def __init__(self, directory: str | os.PathLike):
        self.path = Path(directory) / "scores.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=120)
        self.rejected = 0
        self._stale: set[bytes] = set()  # rejected keys, replaced by their next put
        # Switching a new database to WAL can fail at once with "locked", without waiting, while
        # another process creates it; retry for a while. Two processes may add the column at once.
        for attempt in range(100):
            try:
                with self._full_disk_named():
                    self._db.execute("PRAGMA journal_mode=WAL")
                    self._db.execute("CREATE TABLE IF NOT EXISTS logits (key BLOB PRIMARY KEY, logits BLOB NOT NULL, "
                                     "checksum BLOB) WITHOUT ROWID")
                    if "checksum" not in {row[1] for row in self._db.execute("PRAGMA table_info(logits)")}:
                        self._db.execute("ALTER TABLE logits ADD COLUMN checksum BLOB")  # an older cache's table
                    self._db.commit()
                break
            except sqlite3.OperationalError as err:
                if not ("locked" in str(err) or "duplicate column" in str(err)) or attempt == 99:
                    raise
                time.sleep(0.1)

    @contextlib.contextmanager
    def _full_disk_named(self) -> Iterator[None]:
        """SQLite's errors of a full disk as an OSError naming the cache (the module says which)."""
        try:
            yield
        except sqlite3.OperationalError as err:
            name = getattr(err, "sqlite_errorname", "")
            if name == "SQLITE_FULL" or (name.startswith("SQLITE_IOERR")
                                         and shutil.disk_usage(self.path.parent).free < LOW_SPACE):
                self._db.close()  # its files stay as SQLite left them, whole: a rerun opens them again
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path)) from err
            raise

    @staticmethod
    def key(context: Sequence[Any], query: str, text: str) -> bytes:
        return hashlib.sha256(json.dumps([*context, query, text], ensure_ascii=False).encode()).digest()[:16]

    @staticmethod
    def checksum(key: bytes, blob: bytes) -> bytes:
        return hashlib.sha256(key + blob).digest()[:8]

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The logits of the keys held in rows whose checksum matches; the others are misses (see the module)."""
        found: dict[bytes, np.ndarray] = {}
        failed = unchecked = 0
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            with self._full_disk_named():  # a reader maps the shared-memory file too
                rows = self._db.execute(f"SELECT key, logits, checksum FROM logits WHERE key IN ({marks})", chunk).fetchall()
            for key, blob, checksum in rows:
                if isinstance(blob, bytes) and checksum == self.checksum(key, blob):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
                    continue
                self._stale.add(key)
                unchecked += checksum is None
                failed += checksum is not None
        for count, why in ((failed, "fail their checksum (changed after they were written)"),
                           (unchecked, "have no checksum (written by an older version)")):
            if count:
                print(f"score: {count} rows of {self.path} {why}: scoring them again", file=sys.stderr)
        self.rejected += failed + unchecked
        return found

    def put(self, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store logits; a key already held keeps its row (first written wins), unless `get` rejected it."""
        rows = []
        for key, row in items:
            blob = np.asarray(row, dtype=np.float32).tobytes()
            rows.append((key, blob, self.checksum(key, blob)))
        with self._full_disk_named(), self._db:
            self._db.executemany("INSERT OR IGNORE INTO logits (key, logits, checksum) VALUES (?, ?, ?)",
                                 [row for row in rows if row[0] not in self._stale])
            self._db.executemany("INSERT OR REPLACE INTO logits (key, logits, checksum) VALUES (?, ?, ?)",
                                 [row for row in rows if row[0] in self._stale])
        self._stale.difference_update(row[0] for row in rows)

    def close(self) -> None:
        self._db.close()
