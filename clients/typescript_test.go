package clients_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

const tsDir = "typescript"

// needNode skips (or, under CI=true, fails) without node or without the
// TypeScript client's node_modules (`npm ci` in clients/typescript).
func needNode(t *testing.T) {
	t.Helper()
	need(t, onPath("node"), "node not on PATH (Node 20 or later)")
	_, err := os.Stat(filepath.Join(tsDir, "node_modules", "openapi-fetch"))
	need(t, err == nil, "clients/typescript/node_modules missing (npm ci --prefix clients/typescript)")
}

var tsBuilt sync.Once

// buildTS compiles the client (tsc) into clients/typescript/dist, once per
// test run.
func buildTS(t *testing.T) {
	t.Helper()
	ok := false
	tsBuilt.Do(func() {
		runIn(t, tsDir, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
		ok = true
	})
	if !ok && !built {
		t.Fatal("tsc failed in an earlier test")
	}
	built = built || ok
}

var built bool

// TestTypeScript compiles the client, which type-checks SidecarSession
// against @openai/agents-core's Session, and runs its suite with node --test.
func TestTypeScript(t *testing.T) {
	needNode(t)
	buildTS(t)
	// Files by name: Node 18 and 20 take a directory, later versions globs.
	files, err := filepath.Glob(filepath.Join(tsDir, "tests", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests/*.test.mjs in %s: %v", tsDir, err)
	}
	args := []string{"--test"}
	for _, f := range files {
		args = append(args, filepath.Join("tests", filepath.Base(f)))
	}
	runIn(t, tsDir, "node", args...)
}

// TestTypeScriptTypesUpToDate regenerates the types from the served
// /openapi.json with openapi-typescript: the committed src/schema.ts must
// be exactly that (after a change of the document, run `npm run generate`).
func TestTypeScriptTypesUpToDate(t *testing.T) {
	needNode(t)
	resp, err := http.Get(open.Ops + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /openapi.json: %d %v", resp.StatusCode, err)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "openapi.json"), filepath.Join(dir, "schema.ts")
	if err := os.WriteFile(in, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	runIn(t, tsDir, "node", "node_modules/openapi-typescript/bin/cli.js", in, "--default-non-nullable", "false", "-o", out)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(tsDir, "src", "schema.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(committed) {
		t.Fatalf("clients/typescript/src/schema.ts differs from what openapi-typescript generates from the served /openapi.json: " +
			"run `npm run generate` in clients/typescript against a running sidecar (OPENAPI_URL=http://127.0.0.1:9464/openapi.json) and commit it")
	}
}
