#!/bin/sh
# tests/run.sh - runs every suite (C unit tests, CLI tests, corpus extractor
# tests) and ends with the sum: "N passed, N failed". A suite that dies
# without its own summary line counts as one failure. Exit 0 iff none failed.
BUILD=${BUILD:-build}
export BUILD
# Nothing a test runs may learn into the user's own memory: every suite
# gets a throw-away XDG_DATA_HOME (removed at the end).
XDG_DATA_HOME=$(mktemp -d)
export XDG_DATA_HOME
unset LAYA_MEMORY
passed=0
failed=0
out=$(mktemp)
run() {
    echo "== $1"
    shift
    "$@" >"$out" 2>&1
    rc=$?
    cat "$out"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
    if [ -z "$line" ]; then
        echo "   (suite exited with status $rc and no summary: counted as a failure)"
        failed=$((failed + 1))
        return
    fi
    passed=$((passed + $(echo "$line" | awk '{print $1}')))
    f=$(echo "$line" | awk '{print $3}')
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    failed=$((failed + f))
}
run "unit tests ($BUILD/laya_tests)" "$BUILD/laya_tests"
for t in tests/cli/*.sh; do
    [ -e "$t" ] && run "cli: $t" sh "$t"
done
# The IBus end-to-end test runs where the engine was built (`make ibus`;
# scripts/test.sh does) unless LAYA_NO_E2E is set.
if [ -x "$BUILD/ibus-engine-laya" ] && [ -z "${LAYA_NO_E2E:-}" ]; then
    run "end to end: IBus under Xvfb" sh tests/e2e/ibus.sh
fi
# The fcitx5 one likewise where the addon was built (`make fcitx5`).
if [ -f "$BUILD/fcitx5/liblaya-fcitx5.so" ] && [ -z "${LAYA_NO_E2E:-}" ]; then
    run "end to end: fcitx5 with pinyin under Xvfb" sh tests/e2e/fcitx5.sh
fi
# The settings window's where it was built (`make settings`, or with ibus/fcitx5).
if [ -x "$BUILD/laya-settings" ] && [ -z "${LAYA_NO_E2E:-}" ]; then
    run "end to end: the settings window under Xvfb" sh tests/e2e/settings.sh
fi
if [ -f tests/corpus/run.py ]; then
    run "corpus extractors" python3 tests/corpus/run.py
fi
rm -f "$out"
rm -rf "$XDG_DATA_HOME"
echo "== all suites"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
