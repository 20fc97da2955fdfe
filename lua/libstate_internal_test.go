package lua

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// readOnlyTables are the tables a library's top level may make: each is
// filled there and never changed by a call (lookup tables, a metatable).
var readOnlyTables = map[string]bool{
	"lifecycle.lua STATUSES":  true,
	"lifecycle.lua IS_STATUS": true,
	"adk.lua ORDERS":          true,
}

var (
	topLocal   = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*(?:, [A-Za-z_][A-Za-z0-9_]*)*)(?: = (.*))?$`)
	constItem  = `(?:-?[0-9][0-9.]*|'[^']*'|"[^"]*"|[a-z_]+\.[A-Za-z_]+)`
	constValue = regexp.MustCompile(`^` + constItem + `(?:, ` + constItem + `)*\s*(?:--.*)?$`)
)

// TestLibrariesKeepNoCallState: in the Functions library a library's top
// level runs once, at FUNCTION LOAD, and every FCALL shares it, so a
// table made there and changed by a call would carry one session's data
// into the next call (EVAL runs it anew each call and would never show
// it). A library's top level may only declare functions, constants
// (numbers, strings, another library's function) and the read-only
// tables listed above; everything a call is about lives in its context.
func TestLibrariesKeepNoCallState(t *testing.T) {
	err := fs.WalkDir(files, "lib", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".lua") {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		file := strings.TrimPrefix(p, "lib/")
		for i, line := range strings.Split(string(body), "\n") {
			switch {
			case line == "" || strings.HasPrefix(line, "--") || strings.HasPrefix(line, " ") ||
				strings.HasPrefix(line, "local function ") || line == "end" || strings.HasPrefix(line, "end)") ||
				strings.HasPrefix(line, "return ") || line == "}" || strings.HasPrefix(line, "function "):
				continue
			case strings.HasPrefix(line, "CTX.__index = function"):
				continue // the read-only metatable's lookup
			}
			m := topLocal.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("lua/%s:%d: a top-level statement that is no declaration: %s", p, i+1, line)
				continue
			}
			if m[2] == "" || constValue.MatchString(m[2]) {
				if m[2] == "" {
					t.Errorf("lua/%s:%d: a top-level local without a value (set by a call?): %s", p, i+1, line)
				}
				continue
			}
			if !readOnlyTables[file+" "+m[1]] {
				t.Errorf("lua/%s:%d: top-level %s is neither a constant nor a listed read-only table: %s", p, i+1, m[1], line)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
