#!/usr/bin/env bash
# Makes sure the Go that go.mod names is at hand. Debian's golang package is
# older than go.mod's go line, so on a fresh machine this fetches the release
# from the Go module proxy (golang.org/toolchain, the zip `go` itself
# downloads when GOTOOLCHAIN switches) into ~/.cache/docjobs and links it as
# bin/go, which the Makefile puts first on PATH. Does nothing when a new
# enough go is already on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(awk '$1 == "go" { print $2; exit }' go.mod)

newer_or_equal() { # $1 >= $2, both dotted versions
  [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$2" ]
}
if command -v go >/dev/null; then
  have=$(go env GOVERSION 2>/dev/null | sed 's/^go//') || have=""
  if [ -n "$have" ] && newer_or_equal "$have" "$want"; then
    exit 0
  fi
fi

case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "go-toolchain: no Go release for $(uname -m); install Go $want by hand" >&2; exit 1 ;;
esac
version="v0.0.1-go${want}.linux-${arch}"
root="${XDG_CACHE_HOME:-$HOME/.cache}/docjobs/toolchain"
dir="$root/golang.org/toolchain@$version"
if [ ! -x "$dir/bin/go" ]; then
  command -v unzip >/dev/null || {
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends unzip ca-certificates curl
  }
  proxy=$(printf '%s' "${GOPROXY:-https://proxy.golang.org}" | cut -d, -f1 | cut -d'|' -f1)
  [ "$proxy" = "direct" ] || [ "$proxy" = "off" ] && proxy=https://proxy.golang.org
  mkdir -p "$root"
  zip="$root/$version.zip"
  echo "go-toolchain: fetching Go $want from $proxy" >&2
  curl -fsSL --retry 3 -o "$zip.part" "$proxy/golang.org/toolchain/@v/$version.zip"
  rm -rf "$dir"
  unzip -q "$zip.part" -d "$root"
  rm -f "$zip.part"
  # The proxy's zips do not keep file modes.
  chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
fi
mkdir -p bin
ln -sf "$dir/bin/go" bin/go
"$dir/bin/go" version >&2
