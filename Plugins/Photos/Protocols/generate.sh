#!/usr/bin/env bash
# Regenerates ../Generated/*.pb.swift from photos/v1/*.proto with the protoc-gen-swift that
# scripts/generate-protos.sh builds (run that once first; it also installs protoc when missing).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
plugin="${PROTOC_GEN_SWIFT:-$root/.build-protoc/plugin/debug/protoc-gen-swift}"
[ -x "$plugin" ] || { echo "generate.sh: no protoc-gen-swift at $plugin; run bash scripts/generate-protos.sh once, or set PROTOC_GEN_SWIFT" >&2; exit 1; }
command -v protoc >/dev/null 2>&1 || { echo "generate.sh: protoc is missing; apt-get install -y protobuf-compiler" >&2; exit 1; }

out="$here/../Generated"
rm -rf "$out"
mkdir -p "$out"
cd "$here"
mapfile -t protos < <(find photos -name '*.proto' | LC_ALL=C sort)
protoc --plugin=protoc-gen-swift="$plugin" --proto_path=. --swift_out="$out" \
    --swift_opt=Visibility=Public --swift_opt=FileNaming=DropPath "${protos[@]}"
echo "generate.sh: wrote $(ls "$out" | wc -l) file(s) to Plugins/Photos/Generated"
