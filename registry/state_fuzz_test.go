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
	"github.com/agentsidecar/agentsidecar/sidecar"
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
// algorithm on any pair of JSON objects without duplicate keys, passed as
// the handlers pass them (compacted, escapes kept as the caller wrote
// them: "\u0061" is the key "a"), numbers compared as written.
func FuzzStateMergePatch(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":"b"}`, `{"a":"c"}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`},
		{`{"e":null}`, `{"a":1}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`},
		{`{"a":[1,{"x":null}],"n":1.50}`, `{"a":{"y":[]},"n":null,"m":"\u00e9\\\"/"}`},
		{`{"a":1,"b":{"c":1}}`, `{"\u0061":2,"b":{"\u0063":null}}`},
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
		// As the handlers take them: no duplicate keys, compacted.
		var raw json.RawMessage
		if sidecar.DecodeJSONBytes([]byte(target), &raw) != nil || sidecar.DecodeJSONBytes([]byte(patch), &raw) != nil {
			t.Skip()
		}
		var tb, pb bytes.Buffer
		_ = json.Compact(&tb, []byte(target))
		_ = json.Compact(&pb, []byte(patch))
		n++
		user := fmt.Sprintf("u%d", n)
		if err := c.Do(t.Context(), c.B().Set().Key(srv.Layout().UserKey(registry.UserStateFamily, user)).Value(tb.String()).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		got, err := store.PatchUserState(t.Context(), user, pb.String())
		if err != nil {
			if tb.Len()+pb.Len() > registry.MaxStateBytes/2 {
				t.Skip() // over the size cap
			}
			t.Fatalf("patch %s with %s: %v", tb.String(), pb.String(), err)
		}
		gv, err := decodeNumbers([]byte(got))
		if err != nil {
			t.Fatalf("result %q is not JSON: %v", got, err)
		}
		tv, _ = decodeNumbers(tb.Bytes()) // mergePatch mutates
		if want := mergePatch(tv, pv); !reflect.DeepEqual(gv, want) {
			t.Fatalf("%s + %s:\n got %s\nwant %v", tb.String(), pb.String(), got, want)
		}
	})
}
