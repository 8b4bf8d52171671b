//! Harness for end-to-end tests: locate the built binaries, run them, collect their output.
