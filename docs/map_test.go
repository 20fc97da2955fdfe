package docs_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
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

// TestPackageDocsNameEveryFile: the package doc comments are the map of
// files. Every directory holding tracked non-test .go files (a package:
// commands, examples, test rigs and bench tools too) has a doc.go holding
// its package comment, the only package comment of the directory (what go
// doc shows), and that comment names every tracked non-test file the
// package owns (.go, .lua, .json, scripts, assets): its own and those of
// its subfolders that hold no package of their own (lua/lib, openapi/prism),
// testdata/ excepted. A name counts when it is the file's name or its path
// from the package's folder; a pattern (messages_*.lua) names no file. Every
// file, pattern and folder/ the comment names exists: looked up from the
// package's folder, by name among the package's files (session.lua for
// lib/session.lua), then from the repository's root; a placeholder
// (DIR/NAME.lua) names no file. A non-test .go or .lua file no package owns
// is named by no comment, so it fails too.
func TestPackageDocsNameEveryFile(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files").Output()
	if err != nil {
		t.Skip("not a git checkout:", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if !strings.Contains(f, "node_modules/") {
			files = append(files, f)
		}
	}
	pkgs := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") {
			pkgs[filepath.Dir(f)] = true
		}
	}
	// held: every file under a package's folder and not a deeper package's;
	// owned: those its comment must name.
	held, owned := map[string][]string{}, map[string][]string{}
	for _, f := range files {
		d := filepath.Dir(f)
		for !pkgs[d] && d != "." {
			d = filepath.Dir(d)
		}
		if !pkgs[d] {
			if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, ".lua") {
				t.Errorf("%s: no Go package holds it, so no package doc names it", f)
			}
			continue
		}
		rel := strings.TrimPrefix(f, d+"/")
		held[d] = append(held[d], rel)
		if rel != "doc.go" && !strings.HasSuffix(rel, "_test.go") && !strings.HasPrefix(rel, "testdata/") &&
			!strings.Contains(rel, "/testdata/") {
			owned[d] = append(owned[d], rel)
		}
	}
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	fset := token.NewFileSet()
	for _, d := range dirs {
		doc, err := parser.ParseFile(fset, filepath.Join("..", d, "doc.go"), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Errorf("%s: no doc.go holding the package comment: %v", d, err)
			continue
		}
		if doc.Doc == nil {
			t.Errorf("%s/doc.go: no package comment", d)
			continue
		}
		text := doc.Doc.Text()
		named := map[string]bool{}
		for _, m := range docFileRef.FindAllStringSubmatch(text, -1) {
			ref := m[1]
			if placeholder(ref) {
				continue
			}
			found := docRefFind(held[d], d, ref)
			if len(found) == 0 {
				t.Errorf("%s/doc.go names %s, which does not exist", d, ref)
			}
			if !strings.Contains(ref, "*") {
				for _, f := range found {
					named[f] = true
				}
			}
		}
		for _, m := range docDirRef.FindAllStringSubmatch(text, -1) {
			if !isDir(filepath.Join("..", d, m[1])) && !isDir(filepath.Join("..", m[1])) {
				t.Errorf("%s/doc.go names the folder %s, which does not exist", d, m[1])
			}
		}
		for _, f := range owned[d] {
			if !named[f] {
				t.Errorf("%s/doc.go does not name %s", d, filepath.Join(d, f))
			}
		}
		for _, f := range held[d] {
			if !strings.HasSuffix(f, ".go") || strings.Contains(f, "/") || f == "doc.go" {
				continue
			}
			other, err := parser.ParseFile(fset, filepath.Join("..", d, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Error(err)
				continue
			}
			if other.Doc != nil {
				t.Errorf("%s/%s holds a package comment: the package's one is in %s/doc.go", d, f, d)
			}
		}
	}
}

// docFileRef is a file (or a pattern of files) a package comment names:
// a path of letters, digits, '_', '-', '.' and '*' with a file ending,
// standing alone (not inside a URL path such as /openapi.json).
var docFileRef = regexp.MustCompile("(?:^|[\\s`'\"(\\[,])((?:[A-Za-z0-9_.*-]+/)*(?:[A-Za-z0-9_*][A-Za-z0-9_.*-]*\\.(?:go|lua|json|py|sh|md|txt|sha1|golden|ts|mjs|yml|yaml|mod)|\\.gitignore))(?:$|[^A-Za-z0-9_/])")

// docDirRef is a folder a package comment names: a path ending in '/'.
var docDirRef = regexp.MustCompile("(?:^|[\\s`'\"(\\[,])((?:[A-Za-z0-9_.-]+/)+)(?:$|[\\s,:;)])")

// docRefFind returns the files of held (paths from package folder d) that
// ref denotes: from d, then by name among held; else, marked with a leading
// '/' (no owned file), what ref denotes from d on disk (a nested package's
// file: modules/modules.go) or from the repository's root.
func docRefFind(held []string, d, ref string) []string {
	var found []string
	for _, f := range held {
		if ok, _ := filepath.Match(ref, f); ok {
			found = append(found, f)
		}
	}
	if len(found) == 0 && !strings.Contains(ref, "/") {
		for _, f := range held {
			if ok, _ := filepath.Match(ref, filepath.Base(f)); ok {
				found = append(found, f)
			}
		}
	}
	for _, p := range []string{filepath.Join(d, ref), ref} {
		if len(found) > 0 {
			break
		}
		if m, _ := filepath.Glob(filepath.Join("..", p)); len(m) > 0 {
			found = append(found, "/"+p)
		}
	}
	return found
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
