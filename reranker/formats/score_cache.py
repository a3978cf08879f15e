"""The score cache: `scores.sqlite`, every logit of a scored (query, unit) pair under a content key.

One table, `logits (key BLOB PRIMARY KEY, logits BLOB)`: the key is the first 16 bytes of the SHA-256
of the JSON list `[*context, query, text]` (context: what the logits depend on besides the two texts,
such as the model's fingerprint, dtype and max length), the value the pair's logits as float32 bytes.
SQLite in WAL mode with a busy timeout, so that processes and experiments share one cache (a run
folder's work/cache/scores) and a pair is scored once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np


class ScoreCache:
    """Content-addressed logits in SQLite (WAL, busy timeout), shared by processes and experiments.

    A row holds every logit of a pair, so the rankings read from one head (a grade level, argmax)
    score each pair once.
    """

    def __init__(self, directory: str | os.PathLike):
        self.path = Path(directory) / "scores.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=120)
        # Switching a new database to WAL can fail at once with "locked", without waiting, while
        # another process creates it; retry for a while.
        for attempt in range(100):
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("CREATE TABLE IF NOT EXISTS logits (key BLOB PRIMARY KEY, logits BLOB NOT NULL) "
                                 "WITHOUT ROWID")
                self._db.commit()
                break
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == 99:
                    raise
                time.sleep(0.1)

    @staticmethod
    def key(context: Sequence[Any], query: str, text: str) -> bytes:
        return hashlib.sha256(json.dumps([*context, query, text], ensure_ascii=False).encode()).digest()[:16]

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(f"SELECT key, logits FROM logits WHERE key IN ({marks})", chunk).fetchall()
            found.update((key, np.frombuffer(blob, dtype=np.float32)) for key, blob in rows)
        return found

    def put(self, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO logits (key, logits) VALUES (?, ?)",
                                 ((key, np.asarray(row, dtype=np.float32).tobytes()) for key, row in items))

    def close(self) -> None:
        self._db.close()
