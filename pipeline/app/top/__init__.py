"""`harvest top`: a live view of a running (or finished) job from its metrics and results
topics and its checkpoint."""
