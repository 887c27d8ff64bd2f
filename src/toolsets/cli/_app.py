"""The ``toolsets`` command: the group, its commands (each imported from its own module
when used), and the one error boundary (`main`)."""

from __future__ import annotations

import contextlib
import importlib
import logging
import traceback
from collections.abc import Iterator, Sequence

from toolsets.cli._errors import missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets import __version__
from toolsets._errors import ToolsetError
from toolsets.cli._options import debug_option
from toolsets.cli._terminal import Terminal

__all__ = ["COMMANDS", "cli", "main"]

COMMANDS = {
    "call": "toolsets.cli._call:call_command",
    "inspect": "toolsets.cli._inspect:inspect_command",
    "list": "toolsets.cli._list:list_command",
    "login": "toolsets.cli._logins:login_command",
    "logout": "toolsets.cli._logins:logout_command",
    "prompts": "toolsets.cli._items:prompts_group",
    "resources": "toolsets.cli._items:resources_group",
    "run": "toolsets.cli._run:run_command",
    "serve": "toolsets.cli._serve:serve_command",
    "validate": "toolsets.cli._validate:validate_command",
}
"""Each command's ``module:attribute``, imported only when the command is used, so that
a command imports none of what only another needs (``list`` neither ``inspect``'s
example maker nor ``run``'s agent loop and models)."""


# --- the group -------------------------------------------------------------------------


class _Commands(click.Group):
    """The commands of `COMMANDS`, each imported when it is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, name = where.partition(":")
        command: click.Command = getattr(importlib.import_module(module), name)
        return command


@click.group(
    cls=_Commands,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Examples:
  toolsets list petstore.yaml
  toolsets inspect petstore.yaml getPetById
  toolsets call petstore.yaml getPetById petId=1
  toolsets call --stdio "python server.py" add a=1 b=2
  toolsets validate petstore.yaml
  toolsets serve petstore.yaml --print-config
""",
)
@click.version_option(__version__, "-V", "--version", prog_name="toolsets")
@debug_option
def cli() -> None:
    """Tools from OpenAPI specs, MCP servers and Python functions, from the shell.

    Results go to stdout (JSON with --json); progress and errors to stderr. Errors are
    one line and a non-zero exit status (--debug shows the traceback)."""


# --- the error boundary ----------------------------------------------------------------


def main(argv: Sequence[str]) -> int:
    """Run the command line on ``argv``; the exit status. Every error is one line on
    stderr naming its cause (with ``--debug``, the traceback too). It may run again in
    the same process: it leaves no logging handler behind."""
    with _warnings_as_lines():
        return _status_of(argv)


def _status_of(argv: Sequence[str]) -> int:
    """`main`'s exit status of ``argv``, every error made one line."""
    debug = "--debug" in argv
    terminal = Terminal()

    def fail(message: str, status: int = 1) -> int:
        terminal.err.print(f"toolsets: {' '.join(message.split())}", markup=False)
        return status

    try:
        try:
            cli.main(list(argv), prog_name="toolsets", standalone_mode=False, obj={"debug": debug})
        except BaseExceptionGroup as group:  # a task group's: its first error is the cause
            raise _leaf(group) from group
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:  # a bare `toolsets`: the help
        terminal.err.print(exc.ctx.get_help(), markup=False)
        return 2
    except click.exceptions.Abort:
        return fail("aborted", 130)
    except click.ClickException as exc:
        if debug:
            traceback.print_exc()
        context = exc.ctx if isinstance(exc, click.UsageError) else None
        where = context.command_path if context is not None else "toolsets"
        return fail(f"{exc.format_message()} (see {where} --help)", exc.exit_code)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except (ToolsetError, OSError) as exc:
        if debug:
            traceback.print_exc()
        return fail(_explained(exc))
    except Exception as exc:  # the command line's top-level handler
        if debug:
            traceback.print_exc()
            return fail(f"{type(exc).__name__}: {exc}")
        return fail(f"{type(exc).__name__}: {exc} (--debug shows the traceback)")
    return 0


_SDK_OAUTH_LOGGER = "mcp.client.auth"
"""The logger of the mcp SDK's OAuth client (logins to MCP servers)."""


class _OneLine(logging.Formatter):
    """A log record as the command's other lines: ``toolsets: warning: …``, one line;
    an MCP server's own log message begins with the server's name instead, as it
    comes: ``NAME: warning: …``."""

    def format(self, record: logging.LogRecord) -> str:
        text = " ".join(record.getMessage().split())
        level = record.levelname.lower()
        server = getattr(record, "mcp_server", None)
        if isinstance(server, str):
            return f"{server}: {level}: {text.removeprefix(f'{server}: ')}"
        return f"toolsets: {level}: {text}"


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """toolsets' warnings (an operation a spec's loader left out, say) on stderr as
    one line each while the block runs, unless the program configured logging itself."""
    logger = logging.getLogger("toolsets")
    if logger.handlers or logging.getLogger().handlers:
        yield
        return
    handler = logging.StreamHandler()  # sys.stderr
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_OneLine())
    logger.addHandler(handler)
    # The mcp SDK's OAuth client says why a kept login could not be refreshed; but a
    # record with a traceback ("OAuth flow error") is an error the command says in its
    # own one line (without a handler, Python printed it whole on stderr).
    oauth = logging.getLogger(_SDK_OAUTH_LOGGER)
    said = logging.StreamHandler()
    said.setLevel(logging.WARNING)
    said.setFormatter(_OneLine())
    said.addFilter(lambda record: record.exc_info is None)
    oauth.addHandler(said)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        oauth.removeHandler(said)
        handler.close()
        said.close()


def _explained(error: BaseException) -> str:
    if isinstance(error, ToolsetError):
        return str(error) or type(error).__name__
    return f"{type(error).__name__}: {error}"


def _leaf(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups: what the user must see."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
