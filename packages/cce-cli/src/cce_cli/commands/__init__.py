"""One module per `cce` subcommand: its arguments, its run and its exit status."""
