#!/usr/bin/env bash
# Builds kb-mcp and kb-index in release mode for one target and packs them with
# the licence and the README into dist/kb-mcp-<version>-<target>.tar.gz (.zip on
# Windows), with a .sha256 beside it. The release workflow runs it on Linux,
# macOS and Windows; `.ci/run` runs it on Linux.
#
#   scripts/package-release.sh [TARGET]     # default: the host's target
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(cargo metadata --no-deps --format-version 1 --locked \
  | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "kb-mcp"))')"
if [ $# -gt 0 ]; then
  target="$1"
  cargo build --release --locked --target "$target" --bin kb-mcp --bin kb-index
  built="target/$target/release"
else
  # The host's own target: the plain release build (the one .ci/run makes anyway).
  target="$(rustc -vV | sed -n 's/^host: //p')"
  cargo build --release --locked --bin kb-mcp --bin kb-index
  built="target/release"
fi

exe=""
case "$target" in *windows*) exe=".exe" ;; esac
name="kb-mcp-$version-$target"
stage="dist/$name"
rm -rf "$stage"
mkdir -p "$stage"
cp "$built/kb-mcp$exe" "$built/kb-index$exe" LICENSE README.md "$stage/"

# The packed binaries must run and say which version they are.
for bin in kb-mcp kb-index; do
  "$stage/$bin$exe" --version | grep -q "^$bin $version (index schema [0-9]*)$" \
    || { echo "package-release: $bin --version does not say $version" >&2; exit 1; }
done

cd dist
case "$target" in
  *windows*) archive="$name.zip"; rm -f "$archive"; (cd "$name" && python3 -m zipfile -c "../$archive" .) ;;
  *) archive="$name.tar.gz"; tar -czf "$archive" "$name" ;;
esac
if command -v sha256sum >/dev/null; then sha256sum "$archive" > "$archive.sha256"; else shasum -a 256 "$archive" > "$archive.sha256"; fi
echo "dist/$archive"
