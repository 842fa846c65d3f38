"""Command-line subcommands; each module offers add_parser(subparsers) and sets args.run."""
