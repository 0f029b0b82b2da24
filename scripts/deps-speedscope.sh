#!/usr/bin/env bash
# Installs what tests/speedscope/check.js needs: Debian's Chromium, and the
# npm packages pinned in tests/speedscope/package-lock.json (speedscope for
# its schema and built app, ajv, playwright-core). Playwright's own browser
# download is skipped: the check drives /usr/bin/chromium. Idempotent: does
# only what is missing. Needs root for apt-get.
set -euo pipefail
dir=$(cd "$(dirname "$0")/../tests/speedscope" && pwd)

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps-speedscope: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# npm ci deletes node_modules first: run it only when a package is absent or
# the lock file changed since the last install.
need_ci=0
for pkg in speedscope ajv playwright-core; do
	[ -f "$dir/node_modules/$pkg/package.json" ] || need_ci=1
done
installed=$dir/node_modules/.package-lock.json
[ -f "$installed" ] && [ ! "$dir/package-lock.json" -nt "$installed" ] || need_ci=1
if [ $need_ci = 1 ]; then
	echo "deps-speedscope: npm ci in $dir"
	(cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
echo "deps-speedscope: ready (node $dir/check.js FILE)"
