"""``python -m toolsets.cli``: the ``toolsets`` command."""

from toolsets.cli import main

if __name__ == "__main__":
    main()
