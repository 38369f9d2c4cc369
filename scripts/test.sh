#!/bin/sh
# scripts/test.sh - the README's test command: installs what the build needs,
# builds, runs every test suite. Extra arguments go to make (e.g.
# SANITIZE=address,undefined).
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
make -j"$(nproc)" "$@" all
make "$@" test
