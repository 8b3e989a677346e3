"""The product: the property tests users run (`pytest -n auto tests/properties`)."""
