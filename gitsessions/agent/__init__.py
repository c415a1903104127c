"""The turn loop: compact? -> model -> tools -> commit."""
