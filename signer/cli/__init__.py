"""The signer's own commands (`owlia signer|audit|policy ...`), mounted by `owlia`; `python -m signer.cli` runs them alone."""
