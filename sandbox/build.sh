#!/usr/bin/env bash
# Build (or find) the sandbox binaries: kube-apiserver, etcd and the S3 server (versitygw).
#
# Resolution per binary, first hit wins (sandboxctl.py uses the same order):
#   1. $KUBEBUILDER_ASSETS/<name>   2. <name> on PATH   3. .sandbox/bin/<name>, built here with Go.
# A build happens only when the binary is missing or its stamp (go.sum hash + recipe) changed,
# so a warm call costs a few milliseconds. The only network use is the Go module proxy.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Binaries always live in the checkout's .sandbox/bin, whatever state dir a sandbox uses.
BIN="$ROOT/.sandbox/bin"
TOOLS="$ROOT/sandbox/tools"
S3_TOOLS="$ROOT/sandbox/tools/s3"
# Bump when the build recipe (flags, package paths) changes: forces one rebuild.
RECIPE=2

export GOTOOLCHAIN=local
export GOFLAGS="-buildvcs=false -mod=readonly"
export CGO_ENABLED="${CGO_ENABLED:-0}"

log() { printf '>> sandbox-build: %s\n' "$*" >&2; }

found_elsewhere() {
  local name="$1"
  if [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "$KUBEBUILDER_ASSETS/$name" ]]; then
    log "$name: using \$KUBEBUILDER_ASSETS/$name"
    return 0
  fi
  if command -v "$name" >/dev/null 2>&1; then
    log "$name: using $(command -v "$name") from PATH"
    return 0
  fi
  return 1
}

module_version() {  # module_version <go.mod dir> <module path>
  (cd "$1" && go list -m -f '{{.Version}}' "$2")
}

stamp_of() {  # stamp_of <go.mod dir> : identifies the inputs of a build
  printf 'recipe=%s go=%s sum=%s\n' "$RECIPE" "$(go env GOVERSION)" \
    "$(sha256sum "$1/go.sum" | cut -d' ' -f1)"
}

# build_one <name> <go.mod dir> <package> <first-build hint> [ldflags]
build_one() {
  local name="$1" moddir="$2" pkg="$3" hint="$4" ldflags="${5:-}"
  local out="$BIN/$name" stampfile="$BIN/.$name.stamp" want
  found_elsewhere "$name" && return 0
  command -v go >/dev/null 2>&1 || {
    log "ERROR: $name not found and no Go toolchain to build it (install Go >= 1.24)"
    exit 1
  }
  want="$(stamp_of "$moddir")"
  if [[ -x "$out" && -f "$stampfile" && "$(cat "$stampfile")" == "$want" ]]; then
    return 0
  fi
  mkdir -p "$BIN"
  if [[ -x "$out" ]]; then
    log "rebuilding $name (inputs changed)…"
  else
    log "building $name (first time, $hint)…"
  fi
  local start=$SECONDS
  # -s -w only affect linking, so they do not invalidate the compile cache.
  (cd "$moddir" && go build -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg")
  mv -f "$out.tmp" "$out"
  printf '%s' "$want" >"$stampfile"
  log "$name built in $((SECONDS - start)) s"
}

main() {
  local k8s etcd_v vgw now ldk ldv
  k8s="$(module_version "$TOOLS" k8s.io/kubernetes)"            # e.g. v1.34.4
  etcd_v="$(module_version "$TOOLS" go.etcd.io/etcd/server/v3)"  # e.g. v3.6.4
  vgw="$(module_version "$S3_TOOLS" github.com/versity/versitygw)"
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  local major="${k8s#v}"
  major="${major%%.*}"
  local minor="${k8s#v*.}"
  minor="${minor%%.*}"
  # Version stamps so `kubectl version` and /version report the real release.
  ldk=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldk+=" -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldk+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$now"
  done
  ldv="-X main.Version=$vgw"
  ldv+=" -X main.Build=gomod -X main.BuildTime=$now"

  build_one etcd "$TOOLS" go.etcd.io/etcd/server/v3 "~2 min" \
    "-X go.etcd.io/etcd/api/v3/version.GitSHA=$etcd_v"
  build_one kube-apiserver "$TOOLS" k8s.io/kubernetes/cmd/kube-apiserver "~5 min" "$ldk"
  build_one versitygw "$S3_TOOLS" github.com/versity/versitygw/cmd/versitygw "~2 min" "$ldv"
}

main "$@"
