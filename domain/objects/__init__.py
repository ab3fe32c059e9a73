"""The object store's rules: names and scopes (`names`, light enough for the CLI) and who may do what (`access`)."""
