package fleet

// OnClusterNotReady lets a test see each answer that made a bucket's creation ask again.
func OnClusterNotReady(hook func(error)) func() {
	notReadyHook = hook
	return func() { notReadyHook = nil }
}
