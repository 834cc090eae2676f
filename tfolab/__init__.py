"""tfolab."""
