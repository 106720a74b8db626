"""Every JSON section of a bundle beside the provenance index: its file name, schema, validation on load and reading (docs/bundle-format.md)."""
