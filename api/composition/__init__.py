"""The composition root: settings from the environment, the typed services, and the stack that builds and owns them."""
