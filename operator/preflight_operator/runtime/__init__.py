"""Everything that talks to the cluster or runs processes: the API client, every watch
and cache, leader election and the write gate, the work queue, the controller and its
reconciler, Events out, metrics and health, the rules worker pool."""
