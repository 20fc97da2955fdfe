package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// In embedded mode, TTLs pass in real time as on a real Redis: a session's
// sliding TTL and a lock's PX expiry must not wait for a FastForward.
func TestEmbeddedTTLsFollowTheWallClock(t *testing.T) {
	c := redisstoretest.OpenReady(t, redisstore.Options{Port: 6379, SSLCertReqs: "required"})
	if c.Mode() != "embedded" || c.Embedded() == nil {
		t.Fatalf("mode %q, want embedded", c.Mode())
	}
	client, _ := c.Client()
	ctx := t.Context()
	if err := client.Do(ctx, client.B().Set().Key("lock").Value("tok").Nx().PxMilliseconds(150).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := client.Do(ctx, client.B().Set().Key("session").Value("x").ExSeconds(1).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	t0, _ := client.Do(ctx, client.B().Time().Build()).AsStrSlice()
	time.Sleep(400 * time.Millisecond)
	if n, _ := client.Do(ctx, client.B().Exists().Key("lock").Build()).AsInt64(); n != 0 {
		t.Fatal("150 ms lock still exists after 400 ms")
	}
	// A second SET NX succeeds once the first expired, as on Redis.
	if err := client.Do(ctx, client.B().Set().Key("lock").Value("tok2").Nx().PxMilliseconds(150).Build()).Error(); err != nil {
		t.Fatalf("re-acquire after expiry: %v", err)
	}
	pttl, _ := client.Do(ctx, client.B().Pttl().Key("session").Build()).AsInt64()
	if pttl <= 0 || pttl > 700 {
		t.Fatalf("1 s key has PTTL %d ms after 400 ms, want (0, 700]", pttl)
	}
	t1, _ := client.Do(ctx, client.B().Time().Build()).AsStrSlice()
	if t0[0] == t1[0] && t0[1] == t1[1] {
		t.Fatal("TIME did not move")
	}
}

func TestConnTalksToEveryBackend(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		c := redisstoretest.OpenReady(t, s.Options())
		if c.Cluster() != (s.Cluster != nil) {
			t.Fatalf("Cluster() = %v on %s (mode %q)", c.Cluster(), s.Backend, c.Mode())
		}
		if err := c.Ping(t.Context()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		client, err := c.Client()
		if err != nil {
			t.Fatal(err)
		}
		// Lua with cjson and TIME, which every session script uses.
		got, err := client.Do(t.Context(), client.B().Eval().Script(
			`local t = redis.call('TIME'); return cjson.encode({a = ARGV[1], ok = tonumber(t[1]) > 0})`,
		).Numkeys(0).Arg("é").Build()).ToString()
		if err != nil || got == "" {
			t.Fatalf("EVAL: %q %v", got, err)
		}
	})
}

func TestClientBeforeConnectIsUnavailable(t *testing.T) {
	port, _ := redisstoretest.FreePort()
	c, err := redisstore.Open(redisstore.Options{URL: fmt.Sprintf("redis://127.0.0.1:%d", port), Port: 6379, SSLCertReqs: "required"}, discard())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Client(); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("Client() = %v, want ErrUnavailable", err)
	}
	if err := c.Ping(t.Context()); !redisstore.IsUnavailable(err) {
		t.Fatalf("Ping() = %v, want unavailable", err)
	}
	time.Sleep(300 * time.Millisecond)
	if c.LastError() == "connecting" {
		t.Fatal("LastError does not describe the failed dial")
	}
}

func TestIsUnavailable(t *testing.T) {
	s := redisstoretest.New(t)
	client := s.Client(t)
	client.Do(t.Context(), client.B().Set().Key("s").Value("v").Build())
	_, wrongType := client.Do(t.Context(), client.B().Hget().Key("s").Field("f").Build()).ToString()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"sentinel", redisstore.ErrUnavailable, true},
		{"wrapped sentinel", fmt.Errorf("x: %w", redisstore.ErrUnavailable), true},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"deadline", context.DeadlineExceeded, true},
		{"closing", rueidis.ErrClosing, true},
		{"no slot (cluster map changing)", rueidis.ErrNoSlot, true},
		{"eof", io.EOF, true},
		{"canceled", context.Canceled, false},
		{"wrongtype reply", wrongType, false},
		{"plain", errors.New("bad input"), false},
	}
	for _, tc := range tests {
		if got := redisstore.IsUnavailable(tc.err); got != tc.want {
			t.Errorf("%s: IsUnavailable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	if wrongType == nil {
		t.Fatal("expected a WRONGTYPE reply to test with")
	}
	// Redis replies that mean "not now" count as outages.
	s2 := redisstoretest.NewMini(t)
	c2 := s2.Client(t)
	for _, reply := range []string{"LOADING Redis is loading the dataset in memory",
		"CLUSTERDOWN The cluster is down", "TRYAGAIN Multiple keys request during rehashing of slot"} {
		s2.Mini.SetError(reply)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		err := c2.Do(ctx, c2.B().Get().Key("k").Build()).Error()
		cancel()
		if !redisstore.IsUnavailable(err) {
			t.Fatalf("%q reply %v: not unavailable", reply, err)
		}
	}
}

// WrongType is the one check of Redis's WRONGTYPE, as a command answers it
// and as a script's redis.call does, on every backend; AsWrongType turns
// only that into the 409 key_wrong_type refusal.
func TestWrongType(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, s *redisstoretest.Server) {
		client := s.Client(t)
		ctx := t.Context()
		if err := client.Do(ctx, client.B().Rpush().Key("l").Element("x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		command := client.Do(ctx, client.B().Get().Key("l").Build()).Error()
		script := client.Do(ctx, client.B().Eval().Script("return redis.call('GET', KEYS[1])").Numkeys(1).Key("l").Build()).Error()
		other := client.Do(ctx, client.B().Incr().Key("l2").Build()).Error() // no error
		notInt := client.Do(ctx, client.B().Set().Key("n").Value("a").Build()).Error()
		notInt = errors.Join(notInt, client.Do(ctx, client.B().Incr().Key("n").Build()).Error())
		for _, tc := range []struct {
			name string
			err  error
			want bool
		}{
			{"command", command, true},
			{"script", redisstore.Wrap("eval", script), true},
			{"no error", other, false},
			{"another refusal", notInt, false},
			{"plain", errors.New("WRONGTYPE in a message that is not Redis's"), false},
		} {
			if got := redisstore.WrongType(tc.err); got != tc.want {
				t.Errorf("%s: WrongType(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
			}
			ref := redisstore.AsWrongType(tc.err, "key %s", "l")
			var r *redisstore.Refusal
			if tc.want != (ref != nil) || (ref != nil && (!errors.As(ref, &r) || r.Code != "key_wrong_type" ||
				!errors.Is(ref, redisstore.ErrConflict) || r.Message != "key l")) {
				t.Errorf("%s: AsWrongType = %v, want a key_wrong_type conflict: %v", tc.name, ref, tc.want)
			}
		}
	})
}
