#!/usr/bin/env bash
# The main job on the project's own default model: installs dependencies,
# builds, generates the small CNN with bench/models/make.py and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
python3 bench/models/make.py smallcnn --batch 8 -o build/smallcnn.onnx
build/dtrexec build/smallcnn.onnx --seed 1 --output-dir build/smallcnn-out --stats build/smallcnn-stats.json
