package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The code and the users' pages point at documents the repository holds
// (README.md, docs/*.md, openapi/openapi.json), never at a contract file or
// an issue tracker's numbers a reader of the repository cannot open.
func TestNoCitationsOfAbsentDocuments(t *testing.T) {
	absent := regexp.MustCompile(`CONTRA` + `CT(\.md| §)|DECISIONS\.md|\(issue \d+|\bissues? \d+ (benchmarks|targets)|[Tt]argets of issue \d+`)
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel("..", path)
		isDoc := rel == "README.md" || (filepath.Dir(rel) == "docs" && strings.HasSuffix(rel, ".md"))
		if !isDoc && !strings.HasSuffix(rel, ".go") {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(raw), "\n") {
			if rel != filepath.Join("docs", "citations_test.go") && absent.MatchString(line) {
				t.Errorf("%s:%d cites a document the repository does not hold: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
