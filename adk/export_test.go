package adk

// SetAppPage makes a page across users hold at most n sessions until the
// returned func runs.
func SetAppPage(n int) func() {
	old := appPage
	appPage = n
	return func() { appPage = old }
}
