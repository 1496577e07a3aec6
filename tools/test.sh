#!/usr/bin/env bash
# Builds streamtensor with warnings as errors and runs every test.
#   tools/test.sh            the release build in build/
#   tools/test.sh --sanitize an ASan + UBSan build in build-sanitize/
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = "--sanitize" ]; then
  "$root/tools/build.sh" "$root/build-sanitize" -DSTC_WERROR=ON -DSTC_SANITIZE=ON -DSTC_BUILD_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export LSAN_OPTIONS=suppressions="$root/tools/lsan.supp"
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  cd "$root/build-sanitize" && ctest --output-on-failure --timeout 600 -j2
else
  "$root/tools/build.sh" "$root/build" -DSTC_WERROR=ON
  cd "$root/build" && ctest --output-on-failure --timeout 600 -j2
fi
