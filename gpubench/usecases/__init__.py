"""One use case per command, over the plan and an executor."""
