# shellcheck shell=bash
# Sourced by scripts/test: tests/integrations/test_deploy.py runs deploy/'s nginx site and Caddyfile in a
# real nginx and a real Caddy, both Debian's. Installed here when missing and we may (root with
# apt-get); otherwise those tests skip (or fail with CI=true) with a reason.
missing=()
[[ -x "${TIDINGS_NGINX:-/usr/sbin/nginx}" ]] || missing+=(nginx)
[[ -x "${TIDINGS_CADDY:-/usr/bin/caddy}" ]] || missing+=(caddy)
if ((${#missing[@]})) && command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    echo "installing Debian's ${missing[*]} for the deployment tests ..." >&2
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } \
            >/tmp/tidings-apt-proxies.log 2>&1; then
        echo "warning: could not install ${missing[*]} (see /tmp/tidings-apt-proxies.log)" >&2
    fi
fi
