#!/usr/bin/python3
"""Load + count time of `flopmeter count FILE --format json` (the whole process) against what a
Python user runs to get shapes of the same file: onnx.load + onnx.shape_inference.infer_shapes
(timed inside the interpreter, imports excluded: the comparison favours Python). Two files: a
stripped export from tests/data/onnx, and a weight-embedded export of more than 100 MB that
this script writes to /tmp first (tools/export_onnx.py --embedded). Also times reading the
embedded file's bytes, the floor for any loader. Medians of --runs runs, warm page cache.

    /usr/bin/python3 bench/onnx_load.py [--flopmeter build/flopmeter] [--model resnet101]
"""
import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

import onnx

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def median_time(fn, runs):
    """Median wall and CPU seconds (CPU: this process plus its children)."""
    wall, cpu = [], []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        t1, c1 = time.perf_counter(), time.process_time()
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall.append(t1 - t0)
        cpu.append(c1 - c0 + (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    return statistics.median(wall), statistics.median(cpu)


def flopmeter(binary, path):
    r = subprocess.run([binary, "count", path, "--format", "json"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if r.returncode:
        sys.exit(f"flopmeter failed on {path}: {r.stderr.decode()}")


def python_shapes(path, external):
    m = onnx.load(path, load_external_data=external)
    onnx.shape_inference.infer_shapes(m)


def read_bytes(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flopmeter", default=os.path.join(ROOT, "build", "flopmeter"))
    ap.add_argument("--model", default="resnet101")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    stripped = os.path.join(ROOT, "tests", "data", "onnx", f"{args.model}_op17.onnx")
    embedded = f"/tmp/fm_bench_{args.model}_embedded.onnx"
    if not os.path.exists(embedded):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export_onnx.py"),
                        "--embedded", args.model, embedded], check=True,
                       stderr=subprocess.DEVNULL)
    read_bytes(embedded)   # warm the page cache
    rows = []
    for label, path, external in (("stripped", stripped, False), ("embedded", embedded, True)):
        fm = median_time(lambda: flopmeter(args.flopmeter, path), args.runs)
        py = median_time(lambda: python_shapes(path, external), args.runs)
        rows.append((label, path, os.path.getsize(path), fm, py))
    rd = median_time(lambda: read_bytes(embedded), args.runs)
    # what a user types at a shell: the interpreter and `import onnx` included
    script = ("import onnx, sys; m = onnx.load(sys.argv[1], load_external_data=False); "
              "onnx.shape_inference.infer_shapes(m)")
    pyproc = median_time(lambda: subprocess.run([sys.executable, "-c", script, stripped],
                                                check=True), args.runs)
    print(f"# {time.strftime('%Y-%m-%d')}, {cpu_model()}, {os.cpu_count()} CPUs, "
          f"onnx {onnx.__version__}, median of {args.runs}")
    print("| file | size | flopmeter count, whole process: wall (CPU) | onnx.load + "
          "infer_shapes, in-process: wall (CPU) | ratio, wall (CPU) |")
    print("|---|---|---|---|---|")
    for label, path, size, fm, py in rows:
        print(f"| {args.model} {label} | {size / 1e6:.2f} MB | {fm[0] * 1e3:.1f} ms "
              f"({fm[1] * 1e3:.1f} ms) | {py[0] * 1e3:.1f} ms ({py[1] * 1e3:.1f} ms) | "
              f"{py[0] / fm[0]:.1f}x ({py[1] / max(fm[1], 1e-4):.1f}x) |")
    fm = rows[0][3]
    print(f"| {args.model} stripped, Python as a process (import onnx included) | | "
          f"{fm[0] * 1e3:.1f} ms ({fm[1] * 1e3:.1f} ms) | {pyproc[0] * 1e3:.1f} ms "
          f"({pyproc[1] * 1e3:.1f} ms) | {pyproc[0] / fm[0]:.1f}x ({pyproc[1] / max(fm[1], 1e-4):.1f}x) |")
    print(f"| reading the embedded file's bytes (Python, 16 MB reads) | | {rd[0] * 1e3:.1f} ms "
          f"({rd[1] * 1e3:.1f} ms) | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
