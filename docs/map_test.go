package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pathRef is a repository path a text may name: segments of lowercase
// letters, digits, '_', '-' and '.', at least one '/', and a file ending.
var pathRef = regexp.MustCompile("(?:^|[\\s`'\"(\\[])((?:\\.\\./)*(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\\.(?:go|lua|md|py|sh|json|ts|mjs|yml|yaml|txt|sha1|mod))\\b")

// bareRef is a file a text names without its folder (session_append.lua).
var bareRef = regexp.MustCompile("(?:^|[\\s`'\"(\\[])([a-z][a-z0-9_]*\\.(?:go|lua))\\b")

// TestNamedPathsExist: every repository path a doc or a source comment names
// exists, so the map a newcomer reads is true. A path is looked up from the
// repository's root, from the naming file's folder, and, for the Lua
// libraries a script includes, from lua/ (lib/session.lua). BENCHMARKS.md
// is history (it names the files of past measurements), and a path under a
// URL or with a placeholder (<name>, *) names no one file.
func TestNamedPathsExist(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files").Output()
	if err != nil {
		t.Skip("not a git checkout:", err)
	}
	files := strings.Fields(string(out))
	tracked, base := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		tracked[f] = true
		base[filepath.Base(f)] = true
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, ".lua") && !strings.HasSuffix(f, ".md") &&
			!strings.HasSuffix(f, ".py") && !strings.HasSuffix(f, ".sh") && !strings.HasSuffix(f, ".ts") {
			continue
		}
		if f == "BENCHMARKS.md" || strings.Contains(f, "testdata/") || strings.Contains(f, "node_modules/") ||
			strings.HasSuffix(f, "schema.ts") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.HasSuffix(f, ".md") && !isComment(f, line) {
				continue
			}
			for _, m := range pathRef.FindAllStringSubmatch(line, -1) {
				ref := m[1]
				if strings.Contains(line, "://") && strings.Contains(line, ref) && urlHolds(line, ref) {
					continue
				}
				if placeholder(ref) || exists(f, ref) || endsOne(files, ref) {
					continue
				}
				if !tracked[ref] {
					t.Errorf("%s:%d names %s, which does not exist", f, i+1, ref)
				}
			}
			for _, m := range bareRef.FindAllStringSubmatch(line, -1) {
				if !base[m[1]] && !urlHolds(line, m[1]) && m[1] != "name.lua" {
					t.Errorf("%s:%d names %s, which no file is", f, i+1, m[1])
				}
			}
		}
	}
}

// isComment reports whether line of file f is (or ends in) a comment.
func isComment(f, line string) bool {
	s := strings.TrimSpace(line)
	switch {
	case strings.HasSuffix(f, ".go"), strings.HasSuffix(f, ".ts"):
		return strings.HasPrefix(s, "//") || strings.Contains(s, " // ")
	case strings.HasSuffix(f, ".lua"):
		return strings.HasPrefix(s, "--") || strings.Contains(s, " -- ")
	default:
		return strings.HasPrefix(s, "#") || strings.Contains(s, " # ")
	}
}

// urlHolds reports whether ref stands inside a URL of line.
func urlHolds(line, ref string) bool {
	for _, w := range strings.Fields(line) {
		if strings.Contains(w, "://") && strings.Contains(w, ref) {
			return true
		}
	}
	return false
}

// placeholder reports whether ref names a kind of path, not a file: a
// segment in capitals (DIR/eval/NAME.lua).
func placeholder(ref string) bool {
	for _, seg := range strings.Split(strings.TrimSuffix(ref, filepath.Ext(ref)), "/") {
		if seg != "" && strings.ToUpper(seg) == seg && strings.ToLower(seg) != seg {
			return true
		}
	}
	return false
}

// endsOne reports whether a tracked file's path ends in /ref (a path named
// from its package's folder: src/schema.ts of clients/typescript).
func endsOne(files []string, ref string) bool {
	for _, f := range files {
		if strings.HasSuffix(f, "/"+ref) {
			return true
		}
	}
	return false
}

func exists(from, ref string) bool {
	for _, p := range []string{ref, filepath.Join(filepath.Dir(from), ref), filepath.Join("lua", ref)} {
		if _, err := os.Stat(filepath.Join("..", p)); err == nil {
			return true
		}
	}
	return false
}
