// Package docs_test runs what the users' pages show, against a real sidecar:
// README's run line, agent-loop.md's loops, client.md's install, metrics.md's opening.
package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/client"
	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// block returns the body of the first fenced block of lang after heading in
// the markdown file.
func block(t *testing.T, file, heading, lang string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := "\n" + string(b)
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	m := regexp.MustCompile("(?s)\n```" + lang + "\n(.*?)```\n").FindStringSubmatch(doc[i:])
	if m == nil {
		t.Fatalf("%s has no ```%s block after %q", file, lang, heading)
	}
	return m[1]
}

func start(t *testing.T) *sidecartest.Host {
	t.Helper()
	return sidecartest.Start(t, redisstoretest.New(t), nil, modules.All()...)
}

// run runs a command with SIDECAR_URL=api and returns its stdout.
func run(t *testing.T, api, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	pyClient, err := filepath.Abs("../clients/python") // the Python client, as agent-loop.md runs it
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "SIDECAR_URL="+api, "PYTHONPATH="+pyClient)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, out, stderr)
	}
	return string(out)
}

// record reads a session's record through the API.
func record(t *testing.T, h *sidecartest.Host, user, session string) client.SessionRecord {
	t.Helper()
	r := h.Do(t, "GET", "/v1/users/"+user+"/sessions/"+session, "")
	if r.Status != 200 {
		t.Fatalf("GET session %s/%s: %d %s", user, session, r.Status, r.Body)
	}
	var rec client.SessionRecord
	r.JSON(t, &rec)
	return rec
}

func entryIDs(t *testing.T, h *sidecartest.Host, user, session string) []string {
	t.Helper()
	var entries []client.SessionQAEntry
	h.Do(t, "GET", "/v1/users/"+user+"/sessions/"+session+"/entries?last_n=100", "").JSON(t, &entries)
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.QAID
	}
	return ids
}

func lockFree(t *testing.T, h *sidecartest.Host, name string) {
	t.Helper()
	var st struct {
		Held bool `json:"held"`
	}
	h.Do(t, "GET", "/v1/locks/"+name, "").JSON(t, &st)
	if st.Held {
		t.Fatalf("lock %s still held after the loop", name)
	}
}

func TestAgentLoopPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
	const script = "examples/agent_loop.py"
	if src, err := os.ReadFile(script); err != nil || !strings.Contains(string(src), "\nfrom agentsidecar import ") {
		t.Fatalf("%s does not use the Python client (clients/python), as a user would: %v", script, err)
	}
	run(t, "", "python3", "-c", "import ast,sys; ast.parse(open(sys.argv[1]).read(), feature_version=(3, 9))", script)
	h := start(t)

	got := run(t, h.API, "python3", script)
	if want := block(t, "agent-loop.md", "## In Python", "text"); got != want {
		t.Fatalf("the script printed\n%s\nagent-loop.md shows\n%s", got, want)
	}
	rec := record(t, h, "alice", "agent-loop-demo")
	if rec.Status != client.StatusCompleted || rec.Calls != 3 || rec.EntryCount != 3 || rec.TokensIn != 54 || rec.TokensOut != 22 {
		t.Fatalf("record after the loop: status %s, calls %d, entries %d, tokens %d/%d; want completed, 3, 3, 54/22",
			rec.Status, rec.Calls, rec.EntryCount, rec.TokensIn, rec.TokensOut)
	}
	lockFree(t, h, "notes-alice")

	// The second run reuses the session: three more turns on the same record.
	got = run(t, h.API, "python3", script)
	if !strings.HasPrefix(got, "session alice/agent-loop-demo: reused, status completed, 3 entries\nturn-4: ") {
		t.Fatalf("second run printed\n%s\nwant the session reused with its 3 entries, then turn-4", got)
	}
	if ids, want := strings.Join(entryIDs(t, h, "alice", "agent-loop-demo"), ","), "turn-1,turn-2,turn-3,turn-4,turn-5,turn-6"; ids != want {
		t.Fatalf("entries %s, want %s", ids, want)
	}
	if rec := record(t, h, "alice", "agent-loop-demo"); rec.Calls != 6 {
		t.Fatalf("calls after two runs %d, want 6", rec.Calls)
	}
	lockFree(t, h, "notes-alice")
}

func TestAgentLoopCurl(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
	h := start(t)
	out := run(t, h.API, "bash", "-eu", "-o", "pipefail", "-c", block(t, "agent-loop.md", "## In curl", "sh"))

	if !strings.Contains(out, `{"error":{"code":"not_found"`) {
		t.Fatalf("output does not start with the new session's 404:\n%s", out)
	}
	if strings.Count(out, `{"error":{`) != 1 || !strings.Contains(out, `{"released":true}`) {
		t.Fatalf("want only the first 404 as an error, and the lock released:\n%s", out)
	}
	rec := record(t, h, "alice", "chat-curl")
	// "Where is the dog?" is 17 characters, "In the garden." 14: 17/4, 14/4.
	if rec.Status != client.StatusCompleted || rec.Calls != 1 || rec.EntryCount != 1 || rec.TokensIn != 4 || rec.TokensOut != 3 {
		t.Fatalf("record after the loop: status %s, calls %d, entries %d, tokens %d/%d; want completed, 1, 1, 4/3",
			rec.Status, rec.Calls, rec.EntryCount, rec.TokensIn, rec.TokensOut)
	}
	if ids := strings.Join(entryIDs(t, h, "alice", "chat-curl"), ","); ids != "turn-1" {
		t.Fatalf("entries %s, want turn-1", ids)
	}
	lockFree(t, h, "notes-alice")
}

// agent-loop.md's warning: a guessed field name is 400, and the answer lists
// the names to use.
func TestUsageFieldNames(t *testing.T) {
	h := start(t)
	for _, guess := range []string{"text_in", "prompt"} {
		r := h.Do(t, "POST", "/v1/users/alice/sessions/s/usage", `{"model":"gpt-4o-mini","`+guess+`":"Where is the dog?"}`)
		want := `unknown field \"` + guess + `\"; accepted fields: model, tokens_in, tokens_out, cost_usd, input_text, output_text`
		if r.Status != 400 || r.Code() != "unknown_field" || !strings.Contains(r.Body, want) {
			t.Fatalf("usage with %s: %d %s, want 400 with %s", guess, r.Status, r.Body, want)
		}
		if readme, err := os.ReadFile("../README.md"); err != nil || (guess == "prompt" && !strings.Contains(string(readme), "\n"+strings.TrimSpace(r.Body)+"\n")) {
			t.Fatalf("README.md does not show the answer %s (%v)", r.Body, err)
		}
	}
}
