#!/usr/bin/env bash
# What a release publishes besides the image, built from this checkout into OUT (each in its own folder: all three
# are named hookguard-<version>.tgz):
#   OUT/npm/hookguard-V.tgz          npm pack (prepack builds dist/): `npm install -g` it, then `hookguard check`
#   OUT/chart/hookguard-V.tgz        helm package of charts/hookguard
#   OUT/helm-plugin/hookguard-V.tgz  helm plugin package of plugins/helm-hookguard, for `helm plugin install`; signed
#                                    (with its .prov) when HELM_PLUGIN_SIGNING_KEY names a key in the secret keyring
#                                    HELM_PLUGIN_KEYRING, else unsigned (Helm 4 then needs --verify=false)
# Needs npm and a Helm 4 on PATH. The release workflow (.github/workflows/release.yml) runs it;
# test/e2e/release-plugin.test.ts runs it and installs each file.
set -euo pipefail
out=$(realpath -m "${1:?usage: scripts/release-artifacts.sh OUT_DIR}")
cd "$(dirname "$0")/.."
mkdir -p "$out/npm" "$out/chart" "$out/helm-plugin"
npm pack --pack-destination "$out/npm" >/dev/null
helm package charts/hookguard --destination "$out/chart" >/dev/null
if [[ -n "${HELM_PLUGIN_SIGNING_KEY:-}" ]]; then
  helm plugin package plugins/helm-hookguard --destination "$out/helm-plugin" \
    --key "$HELM_PLUGIN_SIGNING_KEY" --keyring "${HELM_PLUGIN_KEYRING:?HELM_PLUGIN_KEYRING: the secret keyring holding the key}" >/dev/null
else
  helm plugin package plugins/helm-hookguard --destination "$out/helm-plugin" --sign=false >/dev/null
fi
