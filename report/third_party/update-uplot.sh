#!/usr/bin/env bash
# Refreshes the vendored uPlot (uplot/) from the npm registry: the version pinned in ../web/package.json,
# checked against the integrity hash in ../web/package-lock.json. Building never runs this: the build
# embeds the committed copy, so a box that cannot reach npm still builds the report.
#   To move to another version: edit ../web/package.json, `npm install --package-lock-only` in ../web,
#   run this script, look at the diff, commit all three.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
web="$here/../web"
out="$here/uplot"

version="$(node -p "require('$web/package.json').dependencies.uplot")"
locked="$(node -p "require('$web/package-lock.json').packages['node_modules/uplot'].version")"
integrity="$(node -p "require('$web/package-lock.json').packages['node_modules/uplot'].integrity")"
if [ "$version" != "$locked" ]; then
  echo "update-uplot: package.json pins uplot $version but package-lock.json locks $locked;" \
       "run 'npm install --package-lock-only' in report/web first" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# npm ci refuses a tarball whose hash differs from the lockfile's; the explicit check below says which.
cp "$web/package.json" "$web/package-lock.json" "$work/"
(cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
(cd "$work" && npm pack "uplot@$version" --silent >/dev/null)
tarball="$work/uplot-$version.tgz"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$integrity" ]; then
  echo "update-uplot: uplot-$version.tgz has $actual, package-lock.json expects $integrity" >&2
  exit 1
fi

pkg="$work/node_modules/uplot"
mkdir -p "$out"
cp "$pkg/dist/uPlot.iife.min.js" "$pkg/dist/uPlot.min.css" "$pkg/LICENSE" "$out/"
echo "$version" >"$out/VERSION"
# CMake compares these at configure time, so a hand-edited vendored file is caught before it is embedded.
(cd "$out" && sha256sum uPlot.iife.min.js uPlot.min.css LICENSE >SHA256SUMS)
echo "update-uplot: uplot $version ($integrity) in $out"
