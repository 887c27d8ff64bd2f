# Sourced by the scripts: make ./.venv with a Python >= 3.11 and install the project.
VENV="${TOOLSETS_VENV:-.venv}"

find_python() {
    for candidate in python3.13 python3.12 python3.11 python3 python; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "toolsets needs Python >= 3.11; none was found on PATH" >&2
    return 1
}

ensure_venv() {  # $1: what to pip-install, e.g. "." or ".[dev]"
    if [ ! -x "$VENV/bin/python" ]; then
        "$(find_python)" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$1"
}
