package registry_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// mergePatch is RFC 7396's algorithm, the reference for the Lua one.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = mergePatch(t[k], v)
		}
	}
	return t
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// FuzzStateMergePatch: the user state script's merge equals RFC 7396's
// algorithm on any pair of JSON objects (canonicalised first: no duplicate
// keys), numbers compared as written.
func FuzzStateMergePatch(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":"b"}`, `{"a":"c"}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`},
		{`{"e":null}`, `{"a":1}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`},
		{`{"a":[1,{"x":null}],"n":1.50}`, `{"a":{"y":[]},"n":null,"m":"\u00e9\\\"/"}`},
	} {
		f.Add(s[0], s[1])
	}
	srv := redisstoretest.New(f)
	conn := redisstoretest.OpenReady(f, srv.Options())
	store := &registry.Store{Store: sessionstore.New(conn, sessionstore.Config{TTLSeconds: 60, AbandonAfterSeconds: 60})}
	c := srv.Client(f)
	n := 0
	f.Fuzz(func(t *testing.T, target, patch string) {
		tv, err1 := decodeNumbers([]byte(target))
		pv, err2 := decodeNumbers([]byte(patch))
		_, tObj := tv.(map[string]any)
		_, pObj := pv.(map[string]any)
		if err1 != nil || err2 != nil || !tObj || !pObj {
			t.Skip()
		}
		tb, _ := json.Marshal(tv)
		pb, _ := json.Marshal(pv)
		n++
		user := fmt.Sprintf("u%d", n)
		if err := c.Do(t.Context(), c.B().Set().Key(srv.Layout().UserState(user)).Value(string(tb)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		got, err := store.PatchUserState(t.Context(), user, string(pb))
		if err != nil {
			if len(tb)+len(pb) > registry.MaxStateBytes/2 {
				t.Skip() // over the size cap
			}
			t.Fatalf("patch %s with %s: %v", tb, pb, err)
		}
		gv, err := decodeNumbers([]byte(got))
		if err != nil {
			t.Fatalf("result %q is not JSON: %v", got, err)
		}
		tv, _ = decodeNumbers(tb) // mergePatch mutates
		if want := mergePatch(tv, pv); !reflect.DeepEqual(gv, want) {
			t.Fatalf("%s + %s:\n got %s\nwant %v", tb, pb, got, want)
		}
	})
}
