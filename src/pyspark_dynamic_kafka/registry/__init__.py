"""Schema registries: where a cluster's registry is and how to reach it (:mod:`.endpoint`)."""
