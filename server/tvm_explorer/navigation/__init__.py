"""Protocol-free navigation over loaded bundles: the answers behind every editor feature.

Nothing here imports an LSP library: queries take a ``BundleView``, a bundle-relative
document path and a character offset, and return ``Place`` values (path + offsets).
"""
