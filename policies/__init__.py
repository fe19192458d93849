"""The policy language and its pure evaluator.

Nothing in this package does I/O beyond reading a policy file when asked: the signer feeds it a
decoded request plus a snapshot of its ledger, and gets back a decision it can audit and replay.
"""
