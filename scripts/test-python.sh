#!/usr/bin/env bash
# The Python client's tests (python/tests) in the project's own venv (.venv-py/, made by
# scripts/setup.sh), against the release binary (cargo build --release) or $AGENTJAIL_BINARY.
# Any pytest failure fails this script, and so does "no tests collected" (pytest's exit 5).
set -uo pipefail
cd "$(dirname "$0")/.."
py=.venv-py/bin/python
if ! "$py" -c 'import agentjail, pytest' 2>/dev/null; then
    echo "test-python: $py cannot import agentjail and pytest: run scripts/setup.sh" >&2
    exit 1
fi
export AGENTJAIL_BINARY=${AGENTJAIL_BINARY:-$PWD/target/x86_64-unknown-linux-gnu/release/agentjail}
if [ ! -x "$AGENTJAIL_BINARY" ]; then
    echo "test-python: no release binary at $AGENTJAIL_BINARY: run cargo build --release" >&2
    exit 1
fi
"$py" -m pytest -q -p no:cacheprovider -W error::pytest.PytestUnraisableExceptionWarning python/tests "$@"
rc=$?
if [ "$rc" = 5 ]; then
    echo "test-python: pytest collected no tests" >&2
fi
exit "$rc"
