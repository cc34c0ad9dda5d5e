"""Text and pictures for people: the results table, --help, conversations in a terminal, sweep reports."""
