package clients_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// block returns the body of the first fenced block of lang after heading
// in docs/clients.md.
func block(t *testing.T, heading, lang string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := "\n" + string(b)
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/clients.md has no heading %q", heading)
	}
	m := regexp.MustCompile("(?s)\n```" + lang + "\n(.*?)```\n").FindStringSubmatch(doc[i:])
	if m == nil {
		t.Fatalf("docs/clients.md has no ```%s block after %q", lang, heading)
	}
	return m[1]
}

// TestDocsPythonExample runs docs/clients.md's Python example twice (the
// second run stores nothing new) and compares its output with the page's.
func TestDocsPythonExample(t *testing.T) {
	need(t, onPath("python3"), "python3 not on PATH (apt-get install python3)")
	script := filepath.Join(t.TempDir(), "example.py")
	if err := os.WriteFile(script, []byte(block(t, "## Python", "python")), 0o644); err != nil {
		t.Fatal(err)
	}
	want := block(t, "## Python", "text")
	runIn(t, "python", "python3", "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read(), feature_version=(3, 9))", script)
	for run := 1; run <= 2; run++ {
		if got := runIn(t, "python", "python3", script); got != want {
			t.Fatalf("run %d printed\n%s\ndocs/clients.md shows\n%s", run, got, want)
		}
	}
}

// TestDocsTypeScriptExample type-checks docs/clients.md's TypeScript
// example against the built client (imported by its package name), runs
// it twice and compares its output with the page's.
func TestDocsTypeScriptExample(t *testing.T) {
	needNode(t)
	buildTS(t)
	src := block(t, "## TypeScript", "ts")
	// Inside the package directory, so that "@agentsidecar/client" resolves
	// to the package itself (Node's self-reference through "exports").
	ts, js := filepath.Join(tsDir, "tests", ".docs-example.mts"), filepath.Join(tsDir, "tests", ".docs-example.mjs")
	for _, f := range []string{ts, js} {
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(f) })
	}
	runIn(t, tsDir, "node", "node_modules/typescript/bin/tsc", "--noEmit", "--strict", "--skipLibCheck",
		"--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--types", "node", "tests/.docs-example.mts")
	want := block(t, "## TypeScript", "text")
	for run := 1; run <= 2; run++ {
		if got := runIn(t, tsDir, "node", "tests/.docs-example.mjs"); got != want {
			t.Fatalf("run %d printed\n%s\ndocs/clients.md shows\n%s", run, got, want)
		}
	}
}

// TestDocsSuitesAloneNameTheirSettings: docs/clients.md's commands for the
// suites alone set every variable the suites read (their support files),
// so they pass as written.
func TestDocsSuitesAloneNameTheirSettings(t *testing.T) {
	b, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "The suites alone")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(after)
	if !ok || m == nil {
		t.Fatal("docs/clients.md has no sh block after \"The suites alone\"")
	}
	for _, f := range []string{"python/tests/support.py", "typescript/tests/support.mjs"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range regexp.MustCompile(`SIDECAR_[A-Z_]+`).FindAllString(string(src), -1) {
			if !strings.Contains(m[1], v+"=") {
				t.Errorf("%s reads %s, which docs/clients.md's suites-alone commands do not set", f, v)
			}
		}
	}
}
