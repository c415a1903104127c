"""Sessions: the one writer and the operations on stored sessions."""
