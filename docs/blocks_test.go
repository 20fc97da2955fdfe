package docs_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runAPI runs a bash script with API set to the sidecar's URL and returns
// its stdout.
func runAPI(t *testing.T, api, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-eu", "-o", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "API="+api)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, out, stderr)
	}
	return string(out)
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
}

// TestBlocksCurl runs every curl example of blocks.md, in order, against a
// live sidecar: each answer shown in a "# {...}" comment is what the call
// before it printed, the one error is the documented block_full, and the
// prompt shown is the prompt the calls leave, byte for byte.
func TestBlocksCurl(t *testing.T) {
	needTools(t, "bash", "curl")
	h := start(t)
	var out strings.Builder
	for _, heading := range []string{"## User blocks", "## Session blocks", "## The system prompt", "## Tools for the model"} {
		script := block(t, "blocks.md", heading, "sh")
		got := runAPI(t, h.API, script)
		out.WriteString(got)
		for line := range strings.Lines(script) {
			if want, ok := strings.CutPrefix(strings.TrimSpace(line), "# {"); ok {
				if !strings.Contains(got, "{"+want) {
					t.Errorf("%s: the page shows %s\nthe calls printed:\n%s", heading, "{"+want, got)
				}
			}
		}
	}
	if n := strings.Count(out.String(), `{"error"`); n != 1 || !strings.Contains(out.String(), `"code":"block_full"`) {
		t.Errorf("%d errors, want only the documented block_full:\n%s", n, out.String())
	}
	want := block(t, "blocks.md", "After the calls above the prompt is, byte for byte:", "text")
	// The tool example appended a line to memory after the prompt was shown.
	rep := h.Do(t, "GET", "/v1/users/alice/sessions/chat-1/system-prompt?frozen=true", "")
	if rep.Body+"\n" != want {
		t.Errorf("the frozen prompt\n%q\nblocks.md shows\n%q", rep.Body, want)
	}
}

// TestBlocksLoop runs blocks.md's whole loop (a fake model answer calling
// set_context) and compares what it prints with the page.
func TestBlocksLoop(t *testing.T) {
	needTools(t, "bash", "curl", "jq", "tail")
	h := start(t)
	got := runAPI(t, h.API, block(t, "blocks.md", "## The whole loop", "sh"))
	if want := block(t, "blocks.md", "It prints:", "text"); got != want {
		t.Fatalf("the loop printed\n%s\nblocks.md shows\n%s", got, want)
	}
	rep := h.Do(t, "GET", "/v1/users/bob/sessions/loop-demo/blocks/facts", "")
	if rep.Status != 200 || !strings.Contains(rep.Body, `"content":"Answers in French."`) {
		t.Fatalf("the facts block after the loop: %d %s", rep.Status, rep.Body)
	}
}
