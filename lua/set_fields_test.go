package lua_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// set_fields' quick path (a walk over a flat object's members) gives the
// scan's bytes, or leaves the object to the scan: random objects, half of
// them flat, with escapes, nesting, duplicate keys, other spacing and
// cut-off ends.
func TestSetFieldsQuickEqualsScan(t *testing.T) {
	lib, err := os.ReadFile("lib/json.lua")
	if err != nil {
		t.Fatal(err)
	}
	// For each (object, update pairs) in ARGV[5..]: the quick answer, or
	// "-" when it left the object to the scan, then the scan's answer (or
	// "error").
	src := "local json = (function()\n" + string(lib) + "\nend)()\n" + `
local out = {}
for i = 5, #ARGV, 2 do
  local u = cjson.decode(ARGV[i + 1])
  local q = json.set_fields_quick(ARGV[i], u) or '-'
  local ok, s = pcall(json.set_fields_scan, ARGV[i], u)
  out[#out + 1] = q
  out[#out + 1] = ok and s or 'error'
end
return out`
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"feedback_text", "feedback_score", "question", "memify_metadata", "k1", "k2", "k3"}
	var value func(depth int) any
	flat := false // values the quick path takes: no containers, no escapes
	value = func(depth int) any {
		if flat {
			return []any{nil, rng.IntN(100), true, "plain", "é", "x, y: z}", fmt.Sprintf("v%d", rng.IntN(1000))}[rng.IntN(7)]
		}
		switch rng.IntN(8) {
		case 0:
			return nil
		case 1:
			return rng.IntN(100)
		case 2:
			return []string{"plain", `with "quote"`, "brace { and [", `back\slash`, "é", `"k1": 3`}[rng.IntN(6)]
		case 3:
			if depth < 2 {
				m := map[string]any{}
				for range rng.IntN(3) {
					m[names[rng.IntN(len(names))]] = value(depth + 1)
				}
				return m
			}
		case 4:
			if depth < 2 {
				return []any{value(depth + 1), value(depth + 1)}
			}
		case 5:
			return true
		}
		return fmt.Sprintf("v%d", rng.IntN(1000))
	}
	enc := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		c := srv.Client(t)
		keys := make([]string, 15)
		for i := range keys {
			keys[i] = fmt.Sprintf("agent_session_record:u:s%d", i)
		}
		quick := 0
		for round := range 20 {
			args := []string{"0", "0", "u", "s"}
			for range 100 {
				flat = rng.IntN(2) == 0
				sep, colon := ", ", ": "
				if rng.IntN(3) == 0 {
					sep, colon = ",", ":"
				}
				var parts []string
				for range rng.IntN(8) {
					parts = append(parts, enc(names[rng.IntN(len(names))])+colon+enc(value(0)))
				}
				obj := "{" + strings.Join(parts, sep) + "}"
				if rng.IntN(10) == 0 {
					obj = obj[:len(obj)-1]
				}
				flat = false
				var ups [][2]string
				for range 1 + rng.IntN(2) {
					ups = append(ups, [2]string{names[rng.IntN(len(names))], enc(value(1))})
				}
				args = append(args, obj, enc(ups))
			}
			got, err := c.Do(t.Context(), c.B().Eval().Script(src).Numkeys(15).Key(keys...).Arg(args...).Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(got); i += 2 {
				if got[i] == "-" {
					continue
				}
				quick++
				if got[i] != got[i+1] {
					t.Errorf("round %d: set_fields(%s, %s): quick %s, scan %s", round, args[4+i], args[5+i], got[i], got[i+1])
				}
			}
		}
		if quick < 200 {
			t.Errorf("the quick path took only %d of 2000 objects: the test no longer exercises it", quick)
		}
	})
}
