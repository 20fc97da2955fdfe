package docs_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEventsCurl runs events.md's "Try it": a curl -N watcher sees every
// write's event, in order, and its stream ends after deleted.
func TestEventsCurl(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "grep", "mktemp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
	h := start(t)
	out := run(t, h.API, "bash", "-eu", "-o", "pipefail", "-c", block(t, "events.md", "## Try it", "sh"))
	want := "event: reconnected\nevent: entry_appended\nevent: feedback\nevent: x-delta\nevent: abort\nevent: deleted\n"
	if !strings.HasSuffix(out, want) {
		t.Fatalf("output:\n%s\nwant it to end with:\n%s", out, want)
	}
	if !strings.Contains(out, `{"id":"`) || !strings.Contains(out, `{"abort_requested_at":"`) {
		t.Fatalf("output lacks the publish and abort answers:\n%s", out)
	}
}
