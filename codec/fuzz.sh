#!/bin/sh
# Runs each fuzz target of package codec for a while.
#
# Usage: codec/fuzz.sh [budget]   (default 300000x executions; any -fuzztime
# value). A count, not a duration: Go 1.26 can fail a duration-bound run with
# its own "context deadline exceeded" (golang/go#75804).
#
# New crashers are written to codec/testdata/fuzz/<target>/ by go test; fix
# the bug and commit the file as a regression seed.
set -eu
fuzztime=${1:-300000x}
cd "$(dirname "$0")/.."
for target in FuzzFrameReader FuzzDecodeEnvelope FuzzRoundTrip FuzzFastDecode FuzzCompactStream; do
	echo "== $target ($fuzztime)"
	go test ./codec -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"
done
