"""Untrusted text (from a model file, a bundle, a compiler's message) made inert where the
product writes it: Markdown that is rendered (``markdown``), Python scripts the user runs
(``python``), XML reports (``xml``) and plain text shown as it is (``text``: model documents,
terminal lines). One escaping function per kind of output, used by every room that writes one."""
