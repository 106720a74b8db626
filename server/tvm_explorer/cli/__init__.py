"""``tvm-explorer``: one module per subcommand (``compile``, ``coverage``, ``origins``,
``costs``, ``numerics``, ``extract``, ``compare``, ``bisect``, ``serve``), each with an
``add_parser(subparsers)``; ``entry`` builds the parser and dispatches."""


def main(argv=None) -> int:
    """Run the command line; returns the exit code."""
    from tvm_explorer.cli.entry import main as run

    return run(argv)
