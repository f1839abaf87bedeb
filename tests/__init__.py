"""labkit's tests, in folders that mirror the package (docs/style.md)."""
