"""``pmlkit``: the command-line entry point.

Subcommands live in their own modules of this package and are imported only when used
(``pmlkit --help`` stays fast). Every module ``pmlkit.cli.<name>`` listed in
:data:`SUBCOMMANDS` exposes a click command or group called ``command``.

Errors: any :class:`pmlkit.errors.PMLError` (and file-system errors) becomes exactly one
line ``pmlkit: error: <message>`` on stderr and exit code 1; usage errors exit 2 (click's
convention); an unexpected internal error prints one line and exit code 3 (set
``PMLKIT_DEBUG=1`` to see its traceback).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any

import click

from ..errors import PMLError

# subcommand name -> (module under pmlkit.cli, one-line help shown by `pmlkit --help`)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "design": ("design", "Design a mechanism from a reference sample."),
    "assess": ("assess", "Assess the PML of a mechanism under a prior or an uncertainty set."),
    "privatize": ("privatize", "Privatise columns of CSV/Parquet files with a mechanism."),
    "estimate": ("estimate", "Estimate the true distribution behind a released column."),
    "calibrate": ("calibrate", "Calibrate Laplace/Gaussian noise on binary data."),
    "reproduce": ("reproduce", "Reproduce the paper's figures."),
    "audit": ("audit", "Audit the guarantees by simulation."),
    "demo": ("demo", "Run the end-to-end demonstration."),
    "joint": ("joint", "Joint guarantee and design for several columns of a record."),
    "release": ("release", "Release a whole table from a spec (data, manifest, report)."),
}

EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 3


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when it is invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, (mod, _) in SUBCOMMANDS.items() if _available(mod)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = SUBCOMMANDS.get(cmd_name)
        if entry is None or not _available(entry[0]):
            return None
        module = importlib.import_module(f"pmlkit.cli.{entry[0]}")
        command: click.Command = module.command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, SUBCOMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _available(module: str) -> bool:
    return importlib.util.find_spec(f"pmlkit.cli.{module}") is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pmlkit", prog_name="pmlkit")
def cli() -> None:
    """pmlkit: privacy mechanisms with pointwise maximal leakage (PML) guarantees
    designed from empirical distributions."""


def main(argv: list[str] | None = None) -> Any:
    """Run the command line; returns the exit code (for tests) or exits (as a script)."""
    standalone = argv is None
    try:
        rv = cli.main(args=argv, prog_name="pmlkit", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except click.exceptions.Abort:
        click.echo("pmlkit: aborted", err=True)
        code = 130
    except click.ClickException as exc:
        # usage errors (bad option, missing argument): one line, exit 2
        msg = exc.format_message().replace("\n", " ")
        click.echo(f"pmlkit: error: {msg}", err=True)
        code = exc.exit_code
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except PMLError as exc:
        click.echo(f"pmlkit: error: {_one_line(exc)}", err=True)
        code = EXIT_USER_ERROR
    except OSError as exc:
        click.echo(f"pmlkit: error: {_one_line(exc)}", err=True)
        code = EXIT_USER_ERROR
    except KeyboardInterrupt:
        click.echo("pmlkit: interrupted", err=True)
        code = 130
    except Exception as exc:  # an internal error: still no traceback unless asked for
        if os.environ.get("PMLKIT_DEBUG"):
            raise
        click.echo(f"pmlkit: internal error: {type(exc).__name__}: {_one_line(exc)} "
                   "(set PMLKIT_DEBUG=1 for a traceback)", err=True)
        code = EXIT_INTERNAL_ERROR
    if standalone:
        sys.exit(code)
    return code


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    main()
