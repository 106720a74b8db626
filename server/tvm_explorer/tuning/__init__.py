"""Tuning with MetaSchedule (``compile --tune``, docs/tuning.md): the tuning pipeline (tasks
tuned after FuseOps/FuseTIR, the database applied), the ledger per kernel and layer."""
