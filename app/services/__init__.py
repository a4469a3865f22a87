"""The server's work as plain functions: no HTTP here, so tests and scripts call them directly."""
