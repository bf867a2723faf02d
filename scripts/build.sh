#!/usr/bin/env bash
# Builds what hookguard's image ships into OUT_DIR: dist/ (compiled), data/, package.json, and the production
# dependencies only. The Dockerfile runs it; so can you: `scripts/build.sh out && node out/dist/cli/main.js --version`.
# It reinstalls node_modules of the checkout it runs in (npm ci), from package-lock.json.
set -euo pipefail

out="${1:?usage: scripts/build.sh OUT_DIR}"
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [[ "$out" == "$root" || "$root" == "$out"/* ]]; then
  echo "build.sh: OUT_DIR must not contain the checkout" >&2
  exit 2
fi

cd "$root"
# No install scripts: nothing hookguard depends on needs one, and the build runs tsc itself.
npm ci --ignore-scripts --no-audit --no-fund
npm run build

rm -rf "${out:?}"/*
cp -R dist data package.json package-lock.json "$out/"
# Source maps only serve debugging of the TypeScript; the image runs the JavaScript.
find "$out/dist" -name '*.js.map' -delete
(cd "$out" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund)
# Type declarations, TypeScript sources and source maps of the dependencies never run (a third of the size).
find "$out/node_modules" -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' \) -delete
echo "build.sh: $(du -sh "$out" | cut -f1) in $out"
