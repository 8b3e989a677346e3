"""The known-bug registry and the root-cause grouping of findings into upstream drafts."""
