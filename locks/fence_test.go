package locks_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

func release(t testing.TB, base, name, token string) {
	t.Helper()
	if r := do(t, t.Context(), "DELETE", base+"/v1/locks/"+name, tokenBody(token)); r.status != 200 {
		t.Fatalf("release %s: got %d %s, want 200", name, r.status, r.body)
	}
}

// waitGone polls until key has expired (Redis's own clock decides).
func waitGone(t testing.TB, rc rueidis.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := rc.Do(t.Context(), rc.B().Exists().Key(key).Build()).AsInt64()
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists (%v)", key, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFenceKeyExpiresAndTokensStillGrow: the fence key of a name expires
// locks.FenceTTL after its last grant, and a grant after that expiry still
// gets a larger fencing token than every earlier one (token = max(last + 1,
// Redis TIME in µs)).
func TestFenceKeyExpiresAndTokensStillGrow(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h := sidecartest.Start(t, s, nil, locks.Factory)
		rc := s.Client(t)
		keys := locks.KeysOf("once")

		g1 := acquire(t, h.API, "once", `{"ttl_ms":30000}`)
		if n := pttl(t, rc, keys.Fence); n <= 0 || n > locks.FenceTTL.Milliseconds() {
			t.Fatalf("fence key PTTL %d ms, want 1-%d (it expires after locks.FenceTTL)", n, locks.FenceTTL.Milliseconds())
		}
		if n := pttl(t, rc, keys.Meta); n <= 0 || n > 30000 {
			t.Fatalf("meta key PTTL %d ms, want 1-30000 (the lock's TTL)", n)
		}
		release(t, h.API, "once", g1.Token)

		// The fence key expires (as it would FenceTTL after the last grant).
		if err := rc.Do(t.Context(), rc.B().Pexpire().Key(keys.Fence).Milliseconds(1).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		waitGone(t, rc, keys.Fence)
		g2 := acquire(t, h.API, "once", `{"ttl_ms":30000}`)
		if g2.FencingToken <= g1.FencingToken {
			t.Fatalf("fencing token after the fence key expired: %d, want above the last one granted, %d", g2.FencingToken, g1.FencingToken)
		}
		if st := inspect(t, h.API, "once"); st.FencingToken != g2.FencingToken {
			t.Fatalf("inspect shows fence %d, want the grant's %d", st.FencingToken, g2.FencingToken)
		}
		release(t, h.API, "once", g2.Token)

		// While the key lives, the stored token counts even when it is ahead
		// of Redis's clock: the next token is exactly one more.
		ahead := g2.FencingToken + 3_600_000_000 // an hour of µs
		if err := rc.Do(t.Context(), rc.B().Set().Key(keys.Fence).Value(strconv.FormatInt(ahead, 10)).Px(time.Minute).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		g3 := acquire(t, h.API, "once", `{"ttl_ms":30000}`)
		if g3.FencingToken != ahead+1 {
			t.Fatalf("fencing token with the fence key at %d: %d, want %d", ahead, g3.FencingToken, ahead+1)
		}

		// A counter left by an older sidecar (small, no TTL) is taken over:
		// the token grows past it and the key gets its TTL.
		legacy := locks.KeysOf("legacy")
		if err := rc.Do(t.Context(), rc.B().Set().Key(legacy.Fence).Value("7").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if g := acquire(t, h.API, "legacy", `{}`); g.FencingToken <= 7 {
			t.Fatalf("fencing token over a legacy counter at 7: %d, want more", g.FencingToken)
		}
		if n := pttl(t, rc, legacy.Fence); n <= 0 {
			t.Fatalf("legacy fence key PTTL %d after a grant, want a TTL", n)
		}
	})
}

// TestOneOffNamesLeaveNoKeyWithoutTTL: 300 lock names used once (acquired,
// some refreshed, most released, some left to expire) leave only keys that
// expire: the fence keys, for locks.FenceTTL.
func TestOneOffNamesLeaveNoKeyWithoutTTL(t *testing.T) {
	s := redisstoretest.NewReal(t)
	h := sidecartest.Start(t, s, nil, locks.Factory)
	rc := s.Client(t)
	for i := range 300 {
		name := "job-" + strconv.Itoa(i)
		g := acquire(t, h.API, name, `{"ttl_ms":60000}`)
		switch i % 3 {
		case 0:
			release(t, h.API, name, g.Token)
		case 1:
			if r := do(t, t.Context(), "POST", h.API+"/v1/locks/"+name+"/refresh", tokenBody(g.Token)); r.status != 200 {
				t.Fatalf("refresh %s: got %d %s", name, r.status, r.body)
			}
		}
	}
	keys, err := rc.Do(t.Context(), rc.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	fences := 0
	for _, k := range keys {
		if strings.HasSuffix(k, "}:fence") {
			fences++
		}
		if n := pttl(t, rc, k); n < 0 {
			t.Errorf("key %s has no TTL (PTTL %d)", k, n)
		}
	}
	// 300 fence keys, and lock + meta of the 200 not released.
	if fences != 300 || len(keys) != 300+2*200 {
		t.Fatalf("%d keys, %d of them fence keys; want 700 and 300", len(keys), fences)
	}
}

// TestCompanionKeyOfAnotherTypeWritesNothing: when a free lock's fence or
// meta key holds something else, acquire answers 409 lock_key_conflict and
// writes nothing (no lock held by nobody); refresh, release and inspect of a
// lock held without sidecar metadata leave such a meta key alone.
func TestCompanionKeyOfAnotherTypeWritesNothing(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h := sidecartest.Start(t, s, nil, locks.Factory)
		rc := s.Client(t)
		tests := []struct {
			name, key, typ string
			put            rueidis.Completed
		}{
			{"fence-hash", "{fence-hash}:fence", "hash", rc.B().Hset().Key("{fence-hash}:fence").FieldValue().FieldValue("f", "v").Build()},
			{"fence-text", "{fence-text}:fence", "string", rc.B().Set().Key("{fence-text}:fence").Value("not a number").Build()},
			{"meta-list", "{meta-list}:meta", "list", rc.B().Rpush().Key("{meta-list}:meta").Element("x").Build()},
		}
		for _, tc := range tests {
			if err := rc.Do(t.Context(), tc.put).Error(); err != nil {
				t.Fatal(err)
			}
			for _, body := range []string{`{}`, `{"wait_ms":5000}`} {
				r := do(t, t.Context(), "POST", h.API+"/v1/locks/"+tc.name, body)
				if r.status != 409 || r.code() != "lock_key_conflict" || !strings.Contains(r.body, tc.key) {
					t.Fatalf("acquire %s %s: got %d %s, want 409 lock_key_conflict naming %s", tc.name, body, r.status, r.body, tc.key)
				}
			}
			k := locks.KeysOf(tc.name)
			if n, err := rc.Do(t.Context(), rc.B().Exists().Key(k.Lock).Build()).AsInt64(); err != nil || n != 0 {
				t.Fatalf("%s: the lock key exists after a refused acquire (%d, %v): a lock held by nobody", tc.name, n, err)
			}
			for _, other := range []string{k.Fence, k.Meta} {
				if other == tc.key {
					continue
				}
				if n, err := rc.Do(t.Context(), rc.B().Exists().Key(other).Build()).AsInt64(); err != nil || n != 0 {
					t.Fatalf("%s: %s written by a refused acquire (%d, %v)", tc.name, other, n, err)
				}
			}
			if typ, err := rc.Do(t.Context(), rc.B().Type().Key(tc.key).Build()).ToString(); err != nil || typ != tc.typ {
				t.Fatalf("%s: %s is now %q (%v), want the %s left alone", tc.name, tc.key, typ, err, tc.typ)
			}
		}

		// A lock held in redis-py's form, beside a meta key of another type.
		token := strings.Repeat("b", 32)
		if err := rc.Do(t.Context(), rc.B().Set().Key("meta-list").Value(token).Px(time.Minute).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if st := inspect(t, h.API, "meta-list"); !st.Held || st.Owner != "" || st.FencingToken != 0 {
			t.Fatalf("inspect %+v, want held without owner or fence", st)
		}
		if r := do(t, t.Context(), "POST", h.API+"/v1/locks/meta-list/refresh", `{"token":"`+token+`","ttl_ms":90000}`); r.status != 200 {
			t.Fatalf("refresh: got %d %s, want 200", r.status, r.body)
		}
		release(t, h.API, "meta-list", token)
		if n, err := rc.Do(t.Context(), rc.B().Llen().Key("{meta-list}:meta").Build()).AsInt64(); err != nil || n != 1 {
			t.Fatalf("the list at {meta-list}:meta has %d elements (%v) after refresh and release, want 1 (untouched)", n, err)
		}
	})
}
