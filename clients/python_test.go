package clients_test

import (
	"testing"
)

// TestPython runs the Python client's suite (clients/python/tests) with the
// machine's python3: every operation, errors, threads, the lock helper
// under contention between two processes, events, the Agents SDK session.
func TestPython(t *testing.T) {
	need(t, onPath("python3"), "python3 not on PATH (apt-get install python3)")
	runIn(t, "python", "python3", "-c", `import ast, pathlib, sys
for f in sorted(pathlib.Path(".").rglob("*.py")):
    ast.parse(f.read_text(encoding="utf-8"), str(f), feature_version=(3, 9))`)
	runIn(t, "python", "python3", "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v")
}
