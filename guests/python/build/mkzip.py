"""mkzip.py LIB PYBUILDDIR WORK ZIP: writes plimsoll's Python standard library zip.

Every module of LIB (and the sysconfig data of the cross build in PYBUILDDIR, with WORK replaced
by /build) is compiled to a sourceless .pyc with an unchecked hash (no timestamp, no source
needed) and stored, uncompressed, in a zip whose entries are sorted and dated 1980-01-01, so the
same inputs give the same bytes. Packages without a use in a sandboxed tool, or whose C part is
not built for wasm32-wasip1, are left out.
"""
import importlib.util
import os
import sys
import zipfile

LEFT_OUT = {
    # tests, GUI, packaging and developer tools
    "test", "idlelib", "tkinter", "turtledemo", "turtle.py", "ensurepip", "venv", "pydoc_data",
    "site-packages", "__phello__", "__hello__.py", "_pyrepl", "lib2to3", "antigravity.py", "this.py",
    # C parts not built for wasm32-wasip1 (ctypes, sqlite3, curses, dbm, multiprocessing, bz2, lzma)
    "ctypes", "sqlite3", "curses", "dbm", "multiprocessing",
}


def sources(lib, pybuilddir):
    for dirpath, dirnames, filenames in os.walk(lib):
        rel = os.path.relpath(dirpath, lib)
        top = rel.split(os.sep)[0]
        if top in LEFT_OUT or os.path.basename(dirpath) in ("tests", "__pycache__"):
            dirnames[:] = []
            continue
        dirnames.sort()
        for name in sorted(filenames):
            if rel == "." and name in LEFT_OUT:
                continue
            if name.endswith(".py"):
                arc = name if rel == "." else rel.replace(os.sep, "/") + "/" + name
                yield arc, os.path.join(dirpath, name)
    for name in sorted(os.listdir(pybuilddir)):
        if name.startswith("_sysconfigdata_") and name.endswith(".py"):
            yield name, os.path.join(pybuilddir, name)


def main(lib, pybuilddir, work, out):
    if sys.flags.hash_randomization:
        # frozenset constants are marshalled in hash order: a random seed gives other bytes
        sys.exit("mkzip.py: run with PYTHONHASHSEED=0")
    entries = []
    for arc, path in sources(lib, pybuilddir):
        with open(path, "rb") as f:
            src = f.read()
        src = src.replace(os.fsencode(work), b"/build")
        code = compile(src, "/lib/python313.zip/" + arc, "exec", dont_inherit=True, optimize=0)
        data = importlib._bootstrap_external._code_to_hash_pyc(
            code, importlib.util.source_hash(src), checked=False)
        entries.append((arc[:-3] + ".pyc", bytes(data)))
    entries.sort()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.create_system = 3
            z.writestr(info, data)
    print(f"mkzip.py: {len(entries)} modules, {os.path.getsize(out)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:])
