"""The ctypes structs of flopmeter/_lib.py against flopmeter.h: a C program compiled here prints
sizeof of each mirrored struct and offsetof of every field (nested ones too), and each must be
what ctypes computed. A field added, removed, retyped or moved in the header fails here, before
the package writes an option into the wrong place."""
import ctypes
import os
import shutil
import subprocess

import pytest

from flopmeter import _lib

from conftest import ROOT


def _paths(struct, prefix=""):
    for name, typ in struct._fields_:
        off = getattr(struct, name).offset
        yield prefix + name, off, ctypes.sizeof(typ)
        if isinstance(typ, type) and issubclass(typ, ctypes.Structure):
            for sub, o, size in _paths(typ, prefix + name + "."):
                yield sub, off + o, size


def test_structs_match_header(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.fail("no C compiler to check the ctypes layouts with (install gcc)")
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "flopmeter.h"',
             "int main(void) {"]
    expect = []
    for cname, struct in _lib.STRUCTS.items():
        lines.append('printf("%%zu\\n", sizeof(struct %s));' % cname)
        expect.append(("sizeof(%s)" % cname, ctypes.sizeof(struct)))
        for path, off, size in _paths(struct):
            lines.append('printf("%%zu %%zu\\n", offsetof(struct %s, %s), '
                         'sizeof(((struct %s *)0)->%s));' % (cname, path, cname, path))
            expect.append(("%s.%s" % (cname, path), "%d %d" % (off, size)))
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    r = subprocess.run([cc, "-std=c11", "-I", os.path.join(ROOT, "include"), str(src), "-o",
                        str(exe)], capture_output=True, text=True)
    # a field renamed or removed in the header does not compile: say which
    assert r.returncode == 0, "the header lacks a field _lib.py mirrors:\n" + r.stderr[-3000:]
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    for (what, want), line in zip(expect, got):
        assert line == str(want), "%s: C says %s, ctypes %s" % (what, line, want)


def test_enums_match_header():
    """The enum values the package passes (tasks, formats, modes) are the header's."""
    lib = _lib.lib
    lib.fm_task_name.restype = ctypes.c_char_p
    lib.fm_task_name.argtypes = [ctypes.c_int]
    for name, value in _lib.TASKS.items():
        assert lib.fm_task_name(value).decode() == name
    lib.fm_format_name.restype = ctypes.c_char_p
    lib.fm_format_name.argtypes = [ctypes.c_int]
    for name, value in _lib.FORMATS.items():
        assert lib.fm_format_name(value).decode() == name
    lib.fm_mode_name.restype = ctypes.c_char_p
    lib.fm_mode_name.argtypes = [ctypes.c_int]
    assert lib.fm_mode_name(_lib.MODE_TRAIN).decode() == "train"
    assert lib.fm_mode_name(_lib.MODE_INFER).decode() == "infer"
