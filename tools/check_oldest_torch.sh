#!/bin/sh
# The Python package's tests (tests/python) under the oldest PyTorch it is checked with, 2.6, in a
# virtual environment of its own: torch 2.6.0 and torchvision 0.21.0 CPU-only, with the exporter
# packages that work inside 2.6's exporter (onnxscript 0.2.5, onnx 1.17.0, protobuf 5.29: newer
# onnxscript or onnx fail inside it, docs/python.md), and every other pin of
# tools/requirements-test.txt (transformers, pandas, pytest, accelerate, lightning ...).
#
#   sh tools/check_oldest_torch.sh [BUILD_DIR] [PYTEST_ARGS...]
#
# BUILD_DIR (default: build) holds libflopmeter.so and the flopmeter CLI the tests run against.
# OLD_TORCH_VENV: the environment (default ~/.cache/flopmeter/venv-torch2.6), made when missing;
# the pins are installed only when one is missing, so a second run downloads nothing.
# TORCH_INDEX: where torch 2.6's CPU-only wheels are (default PyTorch's own index,
# https://download.pytorch.org/whl/cpu: the CPU-only build). PyPI's Linux x86_64 torch 2.6.0
# is the CUDA build (a 766 MB wheel that needs several GB of nvidia-* wheels), so torch and
# torchvision never come from PyPI here: they are installed first from TORCH_INDEX, then held
# by a constraint while the rest comes from PyPI (a package that wanted a newer torch fails the
# install instead of pulling the CUDA build).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
[ $# -gt 0 ] && shift
venv=${OLD_TORCH_VENV:-$HOME/.cache/flopmeter/venv-torch2.6}
index=${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
for f in "$build/libflopmeter.so" "$build/flopmeter"; do
  [ -e "$f" ] || { echo "check_oldest_torch: no $f: build the library first (make build)"; exit 1; }
done

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
torch_pins="torch==2.6.0 torchvision==0.21.0"
pins="$venv/flopmeter-pins.txt"
cons="$venv/flopmeter-constraints.txt"
{
  printf '%s\n' $torch_pins onnxscript==0.2.5 onnx==1.17.0 protobuf==5.29.6
  grep -vE '^(torch|torchvision|onnx|onnxscript|protobuf)==' "$src/tools/requirements-test.txt"
} > "$pins"
printf '%s\n' $torch_pins > "$cons"
if ! "$py" "$src/tools/python_pins.py" "$pins"; then
  # shellcheck disable=SC2086
  "$py" -m pip install --index-url "$index" $torch_pins
  "$py" -m pip install -r "$pins" -c "$cons"
  "$py" "$src/tools/python_pins.py" "$pins"
fi
"$py" -c 'import torch; print("check_oldest_torch: torch", torch.__version__, "CUDA", torch.version.cuda)'

FLOPMETER_LIB="$build/libflopmeter.so" FLOPMETER_CLI="$build/flopmeter" \
PYTHONPATH="$src/python" "$py" -m pytest "$src/tests/python" -q -p no:cacheprovider "$@"
