"""Exit 0 when every `name==version` pin of a requirements file is installed at that version in
this interpreter's environment, else 1 (naming what is missing): `make python-test` runs pip only
then, so a second run downloads nothing."""
import importlib.metadata as md
import sys

missing = []
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if "==" not in line:
        continue
    name, want = (x.strip() for x in line.split("==", 1))
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        have = None
    # a local version label (torch's 2.6.0+cpu) is the same release as the pin's 2.6.0
    if have is not None and "+" not in want:
        have = have.split("+", 1)[0]
    if have != want:
        missing.append("%s==%s (have %s)" % (name, want, have or "none"))
if missing:
    print("python-test: to install: " + ", ".join(missing))
sys.exit(1 if missing else 0)
