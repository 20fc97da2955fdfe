package clients_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
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

// tsBlocks returns every ```ts block of the product's pages (README.md,
// docs/*.md), each named "<page>#<n>", indented blocks (in a list item)
// included.
func tsBlocks(t *testing.T) map[string]string {
	t.Helper()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fence := regexp.MustCompile("(?ms)^( *)```ts\n(.*?)^ *```\n")
	for _, p := range append(pages, "../README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for n, m := range fence.FindAllStringSubmatch(string(b), -1) {
			var src strings.Builder
			for _, line := range strings.SplitAfter(m[2], "\n") {
				src.WriteString(strings.TrimPrefix(line, m[1]))
			}
			out[fmt.Sprintf("%s#%d", filepath.Base(p), n+1)] = src.String()
		}
	}
	return out
}

// tsc runs the client's TypeScript compiler as a user's project would:
// --strict, ES modules resolved as Node does, the package's own name
// resolving to the built client (Node's self-reference through "exports":
// the files sit inside the package directory), the framework packages
// those the client's lockfile pins (the real ones).
func tsc(t *testing.T, args ...string) {
	t.Helper()
	runIn(t, tsDir, "node", append([]string{"node_modules/typescript/bin/tsc", "--strict", "--skipLibCheck",
		"--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--types", "node"}, args...)...)
}

// TestDocsTypeScriptSnippets compiles every TypeScript block of the pages
// (the OpenAI Agents, LangGraph, ADK and AI SDK ones among them), each a
// module of its own, with tsc --strict against the real framework
// packages: what a user copying one into a project would compile.
func TestDocsTypeScriptSnippets(t *testing.T) {
	needNode(t)
	buildTS(t)
	blocks := tsBlocks(t)
	var names []string
	for name := range blocks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, want := range []string{"adk.md#1", "checkpoints.md#1", "clients.md#1", "clients.md#2", "clients.md#3", "clients.md#4", "clients.md#5"} {
		if blocks[want] == "" {
			t.Errorf("no TypeScript block %s (have %v)", want, names)
		}
	}
	args := []string{"--noEmit"}
	for i, name := range names {
		f := filepath.Join("tests", fmt.Sprintf(".snippet-%d.mts", i))
		if err := os.WriteFile(filepath.Join(tsDir, f), []byte("// "+name+"\n"+blocks[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(filepath.Join(tsDir, f)) })
		args = append(args, f)
	}
	tsc(t, args...)
}

// TestDocsAISDKRoute runs docs/clients.md's AI SDK chat route as it is:
// the block compiled (tsc --strict) and imported by
// tests/ai-sdk-route.check.mjs, which streams the AI SDK's mock model
// through it for a new chat and an existing one.
func TestDocsAISDKRoute(t *testing.T) {
	needNode(t)
	buildTS(t)
	src := block(t, "### Vercel AI SDK (`ai`)", "ts")
	mts := filepath.Join(tsDir, "tests", ".ai-sdk-route.mts")
	if err := os.WriteFile(mts, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.Remove(mts)
		_ = os.Remove(strings.TrimSuffix(mts, ".mts") + ".mjs")
	})
	tsc(t, "tests/.ai-sdk-route.mts")
	runIn(t, tsDir, "node", "--test", "tests/ai-sdk-route.check.mjs")
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
	// the sidecars the harness starts record events whether watched or not
	// (main_test.go): the events tests read after writing
	for _, line := range strings.Split(m[1], "\n") {
		if strings.Contains(line, "/tmp/sidecar &") && !strings.Contains(line, "SESSION_EVENTS=always") {
			t.Errorf("docs/clients.md starts a sidecar for the suites without SESSION_EVENTS=always: %s", line)
		}
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
