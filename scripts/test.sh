#!/bin/sh
# scripts/test.sh - the README's test command: installs what the tests need
# (Debian packages), builds, runs every suite (unit, CLI, corpus extractors,
# the Presage peer, the IBus, fcitx5 and settings-window end-to-end tests) and ends with the
# total "N passed, N failed". Extra arguments go to make, e.g.
# SANITIZE=address,undefined (that build skips the IBus engine, the fcitx5
# addon, which run inside ibus-daemon and fcitx5, outside the sanitizers'
# reach, and the settings window; `make ibus` builds that one too).
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
make layers
case "$*" in
*SANITIZE=*) make -j"$(nproc)" "$@" all ;;
*) make -j"$(nproc)" "$@" all ibus fcitx5 ;;
esac
make "$@" test
