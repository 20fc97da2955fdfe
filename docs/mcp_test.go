package docs_test

import (
	"strings"
	"testing"
)

// TestMCPCurl runs mcp.md's curl block against a live sidecar: each answer
// a "# {...}" or "# [...]" comment shows is what the call before it
// printed, and the text block after it is what the prompt and resource
// calls printed, byte for byte.
func TestMCPCurl(t *testing.T) {
	needTools(t, "bash", "curl", "jq")
	h := start(t)
	script := block(t, "mcp.md", "## With curl", "sh")
	got := runAPI(t, h.API, script)
	shown := 0
	for line := range strings.Lines(script) {
		line = strings.TrimSpace(line)
		if want, ok := strings.CutPrefix(line, "# "); ok && (strings.HasPrefix(want, "{") || strings.HasPrefix(want, "[")) {
			shown++
			if !strings.Contains(got, want+"\n") {
				t.Errorf("the page shows %s\nthe calls printed:\n%s", want, got)
			}
		}
	}
	if shown < 6 {
		t.Fatalf("%d answers shown, want the page's six or more", shown)
	}
	if printed := block(t, "mcp.md", "The prompt and the resources the calls above print:", "text"); !strings.Contains(got, "\n"+printed) {
		t.Errorf("the page shows:\n%s\nthe calls printed:\n%s", printed, got)
	}
}
