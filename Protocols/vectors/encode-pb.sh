#!/usr/bin/env bash
# Re-encodes every *.txtpb here into its *.pb with protoc (an encoder independent of the Swift one).
# Each .txtpb names its message type in a '# type: flowbus.v1.X' line.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
command -v protoc >/dev/null || { echo "encode-pb: protoc is missing; run scripts/generate-protos.sh once, or apt-get install protobuf-compiler" >&2; exit 1; }
# Every contract file, so a vector of any of their messages encodes.
protos=(flowbus/v1/envelope.proto flowbus/v1/errors.proto flowbus/v1/presentation.proto flowbus/v1/flow.proto flowbus/v1/coordination.proto flowbus/v1/services.proto)
for source in *.txtpb; do
    type="$(sed -n 's/^# type: //p' "$source")"
    [ -n "$type" ] || { echo "encode-pb: $source has no '# type:' line" >&2; exit 1; }
    protoc --proto_path=.. --encode="$type" "${protos[@]}" < "$source" > "${source%.txtpb}.pb"
done
echo "encode-pb: encoded $(ls *.txtpb | wc -l) vectors"
