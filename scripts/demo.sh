#!/bin/sh
# scripts/demo.sh - the README's run command: installs what the build needs,
# builds, starts the interactive demo on the shipped default model.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh --build
make -j"$(nproc)" all
exec build/laya type "$@"
