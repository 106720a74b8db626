"""Running compiled models: the inputs they are run on (shared by ``--numerics`` and
``--profile``)."""
