#!/usr/bin/env bash
# Regenerates Sources/FlowProtocol/Generated/*.pb.swift from Protocols/**/*.proto (the core's
# contract), and for each app with its own schemas, Plugins/<App>/Generated/*.pb.swift from
# Plugins/<App>/Protocols/**/*.proto plus Plugins/<App>/Resources/schema.pb, the app's
# FileDescriptorSet that its view models publish on the bus (so any client can read its payloads).
#
# protoc comes from Debian's protobuf-compiler (installed with apt-get when missing);
# protoc-gen-swift is built from the swift-protobuf checkout this package resolves,
# so the generator always matches the SwiftProtobuf runtime the package links.
# The plugin build takes minutes the first time; later runs reuse .build-protoc.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v protoc >/dev/null 2>&1; then
    echo "generate-protos: protoc is missing; installing protobuf-compiler with apt-get"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null
fi

# Resolve into our own scratch folder: the default .build is often locked by a long build
# running beside us, and Package.resolved pins the same swift-protobuf revision either way.
scratch="$root/.build-protoc"
echo "generate-protos: resolving packages"
swift package --scratch-path "$scratch" resolve
checkout="$scratch/checkouts/swift-protobuf"
[ -d "$checkout" ] || { echo "generate-protos: $checkout is missing after 'swift package resolve'" >&2; exit 1; }
echo "generate-protos: swift-protobuf checkout at $(git -C "$checkout" describe --tags --always 2>/dev/null || echo unknown)"

echo "generate-protos: building protoc-gen-swift from $checkout (the first build takes minutes)"
swift build --package-path "$checkout" --scratch-path "$scratch/plugin" --product protoc-gen-swift 2>&1 | tail -1
plugin="$(swift build --package-path "$checkout" --scratch-path "$scratch/plugin" --show-bin-path)/protoc-gen-swift"
[ -x "$plugin" ] || { echo "generate-protos: $plugin was not built" >&2; exit 1; }

# generate SOURCE_DIR OUT_DIR [DESCRIPTOR_SET]: every .proto under SOURCE_DIR (paths relative
# to it, so generated names follow the package layout), with Protocols/ on the import path.
generate() {
    local source="$1" out="$2" descriptors="${3:-}"
    local protos
    mapfile -t protos < <(cd "$source" && find . -name '*.proto' | sed 's|^\./||' | LC_ALL=C sort)
    [ ${#protos[@]} -gt 0 ] || { echo "generate-protos: no .proto files under $source" >&2; exit 1; }
    rm -rf "$out"
    mkdir -p "$out"
    local include=(--proto_path="$source")
    [ "$source" = "Protocols" ] || include+=(--proto_path=Protocols)
    protoc \
        --plugin=protoc-gen-swift="$plugin" \
        "${include[@]}" \
        --swift_out="$out" \
        --swift_opt=Visibility=Public \
        --swift_opt=FileNaming=DropPath \
        "${protos[@]}"
    if [ -n "$descriptors" ]; then
        mkdir -p "$(dirname "$descriptors")"
        protoc "${include[@]}" --include_imports --descriptor_set_out="$root/$descriptors" "${protos[@]}"
    fi
    echo "generate-protos: wrote $(ls "$out" | wc -l) files to ${out#"$root"/}${descriptors:+ and $descriptors}"
}

generate Protocols "$root/Sources/FlowProtocol/Generated"
for app in Plugins/*/; do
    app="${app%/}"
    [ -d "$app/Protocols" ] || continue
    generate "$app/Protocols" "$root/$app/Generated" "$app/Resources/schema.pb"
done
echo "generate-protos: protoc $(protoc --version | awk '{print $2}'), protoc-gen-swift $("$plugin" --version | awk '{print $2}')"
