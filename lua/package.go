package lua

import (
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"unicode"
)

// Package registers the Lua of a module (fsys, its embedded *.lua files)
// and returns its scripts, so that a module's scripts.go is its embed line
// and one call. The libraries come first, in the order given (a library may
// include those before it; a script's includes are resolved when it is
// registered), each as LibraryFromFS does. Then each field of T, a struct
// of *Script fields, gets its script as FromFS registers it: field EntryGet
// is <prefix>_entry_get.lua, and a field tagged `lua:"readonly"` is
// ReadOnly. A .lua file of fsys that is neither a library nor a field's
// script, a field without its file, or a field of another type panics at
// init: a module's scripts are exactly its files.
func Package[T any](fsys fs.FS, prefix string, libraries ...string) *T {
	used := map[string]bool{}
	for _, l := range libraries {
		LibraryFromFS(fsys, l)
		used[l+".lua"] = true
	}
	out := new(T)
	v := reflect.ValueOf(out).Elem()
	if v.Kind() != reflect.Struct {
		panic(fmt.Sprintf("lua.Package: %T is not a struct of *lua.Script fields", *out))
	}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Type != reflect.TypeFor[*Script]() || !f.IsExported() {
			panic(fmt.Sprintf("lua.Package: field %s of %T: want an exported *lua.Script", f.Name, *out))
		}
		var opts []Option
		switch tag := f.Tag.Get("lua"); tag {
		case "":
		case "readonly":
			opts = append(opts, ReadOnly)
		default:
			panic(fmt.Sprintf("lua.Package: field %s: tag lua:%q (want \"readonly\" or none)", f.Name, tag))
		}
		name := prefix + "_" + snake(f.Name)
		v.Field(i).Set(reflect.ValueOf(FromFS(fsys, name, opts...)))
		used[name+".lua"] = true
	}
	all, err := fs.Glob(fsys, "*.lua")
	if err != nil {
		panic(fmt.Sprintf("lua.Package: %v", err))
	}
	for _, file := range all {
		if !used[file] {
			panic(fmt.Sprintf("lua.Package: %s is neither a library named nor a field of %T", file, *out))
		}
	}
	return out
}

// snake is a Go field name in snake case: EntryGet is entry_get.
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
