#!/usr/bin/env bash
# Installs what the tests need on a Debian machine (as root; apt-get for the system packages,
# a helm binary under target/tools, Citus through its cluster script when one is there),
# then returns: README's test command is `tests/install-deps.sh && cargo test`, and .ci/run
# runs the same two. Each step is skipped when what it installs is there already, so a
# second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

# The tests start their own PostgreSQL from the machine's server binaries.
if ! command -v initdb >/dev/null 2>&1 && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  echo "installing PostgreSQL server binaries"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql
fi
# initdb refuses to run as root: the launcher runs PostgreSQL as this user.
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin postgres
fi

# The cluster-script test puts nginx in front of the brokers and probes them with curl.
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  echo "installing nginx"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx-light
fi
if ! command -v curl >/dev/null 2>&1; then
  echo "installing curl"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q curl
fi

# The console's browser tests drive Debian's Chromium through ChromeDriver
# (tests/broker/console.rs).
if ! command -v chromedriver >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium and chromium-driver"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver
fi

# The compatibility tests run the published Python client from a venv they make
# themselves (tests/broker/compat_python.rs): they need python3 that can make one.
# Debian's python3 needs python3-venv for that, so try it rather than look for a module.
venv_probe="$(mktemp -d)"
if ! python3 -m venv "$venv_probe/venv" >/dev/null 2>&1; then
  echo "installing python3 with venv"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3 python3-venv
fi
rm -rf "$venv_probe"

# The image test (tests/broker/image.rs) builds the Containerfile with buildah on a base
# that mmdebstrap makes from Debian packages, and runs it in network namespaces (iproute2);
# it strips the broker with objcopy (binutils).
if ! command -v buildah >/dev/null 2>&1 || ! command -v mmdebstrap >/dev/null 2>&1 \
  || ! command -v ip >/dev/null 2>&1 || ! command -v objcopy >/dev/null 2>&1; then
  echo "installing buildah, mmdebstrap, iproute2 and binutils"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q buildah mmdebstrap iproute2 binutils
fi

# The chart tests run helm lint/template: put a helm 3 binary where they look for it.
helm/fetch-helm.sh target/tools >/dev/null

# The Citus sub-run (tests/broker/citus_suite.rs) runs the compat suite and the tests that
# cross workers on a Citus cluster the cluster script starts: build Citus with it (needs
# root the first time; a no-op once Citus is installed). Without the script the sub-run is
# skipped, and both say so.
citus_script=${QUEEN_CITUS_CLUSTER_SH:-$(cd .. && pwd)/shared/citus/cluster.sh}
if [ -f "$citus_script" ]; then
  "$citus_script" build
else
  echo "no Citus cluster script at $citus_script (set QUEEN_CITUS_CLUSTER_SH):" \
    "cargo test will skip the Citus sub-run"
fi
