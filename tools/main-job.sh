#!/usr/bin/env bash
# The main job: builds stc and simulates example networks on the embedded U55C default.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/build.sh" "$root/build" >/dev/null
stc="$root/build/tools/stc/stc"
"$stc" simulate "$root/models/networks/attention_row.yaml" --ctx 1024
echo
"$stc" simulate "$root/models/networks/fork_join.yaml" || [ $? -eq 3 ]
