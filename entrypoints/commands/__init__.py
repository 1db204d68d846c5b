"""The `runnel` command and its subcommands."""
