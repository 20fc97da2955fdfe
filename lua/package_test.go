package lua

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{"Read": "read", "EntryGet": "entry_get", "SearchPending": "search_pending"} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

// A field that is not a *Script, or a tag Package does not know, panics
// before anything is registered.
func TestPackageRefusesBadFields(t *testing.T) {
	fsys := fstest.MapFS{"pkgtest_a.lua": {Data: []byte("return 1")}}
	for name, call := range map[string]func(){
		"not a script": func() { Package[struct{ A string }](fsys, "pkgtest") },
		"unknown tag": func() {
			Package[struct {
				A *Script `lua:"fast"`
			}](fsys, "pkgtest")
		},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "lua.Package") {
					t.Errorf("%s: recovered %v, want a lua.Package panic", name, r)
				}
			}()
			call()
		}()
	}
	if Named("pkgtest_a") != nil {
		t.Error("pkgtest_a registered by a refused Package")
	}
}
