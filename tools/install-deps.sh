#!/usr/bin/env bash
# Installs the Debian packages streamtensor builds and tests with (Chromium renders the HTML report in
# its tests), when any is missing (needs root, or sudo).
set -euo pipefail
packages=(g++ cmake ninja-build pkg-config make python3
          libsystemc-dev libglpk-dev libyaml-cpp-dev libonnx-dev libprotobuf-dev protobuf-compiler
          libtbb-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
          libpng-dev chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
