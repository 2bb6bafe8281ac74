"""The Python package's tests run against the library and CLI of a build tree (make python-test
sets FLOPMETER_LIB and FLOPMETER_CLI to $(BUILD)'s) or, when those are not set, against the
package as installed (pip install .), else ./build's."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if "FLOPMETER_LIB" not in os.environ:
    try:
        import flopmeter._lib as _l  # an installed package brings its library
        _l.library_path()
    except Exception:
        build = os.path.join(ROOT, "build")
        os.environ["FLOPMETER_LIB"] = os.path.join(build, "libflopmeter.so")
        os.environ.setdefault("FLOPMETER_CLI", os.path.join(build, "flopmeter"))
        if os.path.join(ROOT, "python") not in sys.path:
            sys.path.insert(0, os.path.join(ROOT, "python"))
