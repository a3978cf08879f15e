"""The error every reader raises for a malformed file."""

from __future__ import annotations

import os


class FormatError(ValueError):
    """A file that does not follow its format; the message names the file and line."""

    def __init__(self, path: str | os.PathLike, line_no: int | None, message: str):
        where = f"{path}:{line_no}" if line_no is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line_no = line_no
