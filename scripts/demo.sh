#!/usr/bin/env bash
# The main job on the project's own default model: installs dependencies,
# builds, generates the small CNN with bench/models/make.py, runs one
# inference, then trains it for a few steps under a memory budget of 0.8x
# its unbudgeted peak (DTR evicts and recomputes; --verify-remat checks every
# recomputation bit for bit) and prints the statistics.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
python3 bench/models/make.py smallcnn --batch 32 -o build/smallcnn.onnx
build/dtrexec build/smallcnn.onnx --seed 1 --output-dir build/smallcnn-out
build/dtrexec build/smallcnn.onnx --train --steps 5 --optimizer adam --lr 0.01 --seed 1 \
    --budget 0.8x --verify-remat --stats build/smallcnn-train.json --save build/smallcnn-trained.onnx
cat build/smallcnn-train.json
