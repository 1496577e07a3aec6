#!/usr/bin/env bash
# The main job: builds stc and predicts GPT-2's decode on the embedded U55C default (the paper's table:
# prompt:generation 32:32, 64:64, 128:128, 256:256).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/build.sh" "$root/build" >/dev/null
"$root/build/tools/stc/stc" simulate "$root/models/gpt2.yaml" --table
