#!/usr/bin/env bash
# Vendors Redoc's standalone bundle into static/ from the npm package at the
# version given (the one apidocs.go names in RedocVersion), with its licences.
#
#   internal/apidocs/vendor.sh 2.5.4
#
# One change is made to the bundle: Redoc's sidebar shows Redocly's logo from
# https://cdn.redoc.ly (an image request to another origin on every load,
# which the page's policy forbids). The image is removed; the "API docs by
# Redocly" link stays. The script fails when the bundle no longer has that
# image, so a new version is looked at rather than patched blindly.
set -euo pipefail
version=${1:?usage: vendor.sh REDOC_VERSION}
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "redoc@$version" >/dev/null && tar xzf "redoc-$version.tgz")
node - "$tmp/package/bundles/redoc.standalone.js" "$dir/static/redoc.standalone.js" <<'JS'
const fs = require('fs');
const [src, dst] = process.argv.slice(2);
let js = fs.readFileSync(src, 'utf8');
const logo = /[A-Za-z_$][\w$]*\.createElement\("img",\{alt:"redocly logo",onError:\(\)=>[A-Za-z_$][\w$]*\(!1\),src:"https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini\.svg"\}\)/g;
const found = js.match(logo) || [];
if (found.length !== 1) {
  console.error(`vendor.sh: expected the Redocly logo image once, found it ${found.length} times`);
  process.exit(1);
}
js = js.replace(logo, 'null');
fs.writeFileSync(dst, js);
JS
# Redoc's own licence, and the licences of what the bundle includes (the
# bundle's first line points at the latter by this name).
cp "$tmp/package/LICENSE" "$dir/static/redoc-LICENSE.txt"
cp "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" "$dir/static/"
echo "vendored redoc $version: $(wc -c <"$dir/static/redoc.standalone.js") bytes"
