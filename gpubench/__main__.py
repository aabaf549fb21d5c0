from gpubench.cli import cli

cli()
