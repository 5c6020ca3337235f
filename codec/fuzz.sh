#!/bin/sh
# Runs each fuzz target of package codec for a while.
#
# Usage: codec/fuzz.sh [duration]   (default 20s; any -fuzztime value)
#
# New crashers are written to codec/testdata/fuzz/<target>/ by go test; fix
# the bug and commit the file as a regression seed.
set -eu
fuzztime=${1:-20s}
cd "$(dirname "$0")/.."
for target in FuzzFrameReader FuzzDecodeEnvelope FuzzRoundTrip FuzzFastDecode FuzzCompactStream; do
	echo "== $target ($fuzztime)"
	go test ./codec -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"
done
