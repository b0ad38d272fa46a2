# shellcheck shell=bash
# Sourced by scripts/test and scripts/demo: make sure .venv exists and holds this checkout,
# installed editable with its test extras. Needs only python3 (3.11+) and network access to PyPI.
# pip runs again only when pyproject.toml changes (its hash is kept in .venv/.tidings-installed).

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
python="${PYTHON:-python3}"

# A venv whose python or pip is missing (an interrupted first run, a moved checkout) is remade.
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$venv"
    if ! "$python" -m venv "$venv"; then
        echo "error: '$python -m venv' failed; on Debian/Ubuntu install python3-venv" >&2
        exit 1
    fi
fi

stamp="$venv/.tidings-installed"
want="$("$venv/bin/python" -c 'import hashlib, sys
print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$root/pyproject.toml")"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "installing tidings and its test dependencies into .venv ..." >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$root[test]"
    echo "$want" >"$stamp"
fi
