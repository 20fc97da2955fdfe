package locks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// The lock's keys (keys.go).
func lockKey(name string) string  { return KeysOf(name).Lock }
func fenceKey(name string) string { return KeysOf(name).Fence }
func metaKey(name string) string  { return KeysOf(name).Meta }

// newToken returns 128 random bits as 32 lowercase hex characters (the
// length of redis-py's uuid1().hex tokens).
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// holder describes who holds a lock. Owner and Fence are known only when a
// sidecar caller holds it (a redis-py holder leaves no metadata).
type holder struct {
	TTL   time.Duration // -1 when the key has no expiry
	Owner string
	Fence int64 // 0 when unknown
}

// grant is a lock just acquired or refreshed.
type grant struct {
	Fence     int64
	Owner     string
	TTL       time.Duration
	ExpiresAt time.Time // Redis TIME + TTL, never the pod's clock
	// Replicated says whether a replica acknowledged the grant within the
	// replica wait; nil when that wait is off.
	Replicated *bool
}

// store runs the lock scripts.
type store struct {
	redis *redisstore.Conn
	// replicaWait > 0 sends each acquire with WAIT 1 <replicaWait> on the
	// same connection (SIDECAR_LOCK_REPLICA_WAIT_MS).
	replicaWait time.Duration
}

func (s store) client() (rueidis.Client, error) { return s.redis.Client() }

// tryAcquire runs one SET NX PX attempt. It returns the grant, or the
// current holder when the lock is taken.
func (s store) tryAcquire(ctx context.Context, name, token, owner string, ttl time.Duration) (*grant, *holder, error) {
	c, err := s.client()
	if err != nil {
		return nil, nil, err
	}
	keys, args := []string{lockKey(name), fenceKey(name), metaKey(name)}, []string{token, ms(ttl), owner, ms(FenceTTL)}
	var replicated *bool
	var vals []rueidis.RedisMessage
	if s.replicaWait > 0 {
		vals, replicated, err = s.acquireAndWait(ctx, c, keys, args)
	} else {
		vals, err = AcquireScript.Exec(ctx, c, keys, args).ToArray()
	}
	if err != nil {
		return nil, nil, redisstore.Wrap("lock acquire", err)
	}
	if len(vals) < 2 {
		return nil, nil, fmt.Errorf("lock acquire: short reply (%d values)", len(vals))
	}
	switch intAt(vals, 0) {
	case -1:
		return nil, nil, foreignKey(name, strAt(vals, 1), strAt(vals, 2))
	case 1:
		now := intAt(vals, 2)
		return &grant{Fence: intAt(vals, 1), Owner: owner, TTL: ttl, ExpiresAt: time.UnixMilli(now).Add(ttl).UTC(), Replicated: replicated}, nil, nil
	}
	return nil, &holder{TTL: pttl(intAt(vals, 1)), Owner: strAt(vals, 2), Fence: intAt(vals, 3)}, nil
}

// foreignKey is the refusal of a free lock whose companion key holds
// something that is not the lock's: the script wrote nothing.
func foreignKey(name, key, typ string) error {
	return redisstore.Refuse(redisstore.ErrConflict, "lock_key_conflict",
		"lock %s cannot be taken: its key %s holds a %s that is not this lock's; nothing was written (remove that key, or pick another name)", name, key, typ)
}

// acquireAndWait runs the acquire script and WAIT 1 <replicaWait> as one
// pipeline. WAIT counts the replicas that acknowledged the last write of its
// own connection, so both go on one connection: rueidis sends a multi
// holding a blocking command (WAIT) together on a dedicated connection.
func (s store) acquireAndWait(ctx context.Context, c rueidis.Client, keys, args []string) ([]rueidis.RedisMessage, *bool, error) {
	wait := c.B().Wait().Numreplicas(1).Timeout(s.replicaWait.Milliseconds()).Build()
	res := c.DoMulti(ctx, c.B().Evalsha().Sha1(AcquireScript.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(), wait)
	if rerr, ok := rueidis.IsRedisErr(res[0].Error()); ok && rerr.IsNoScript() {
		wait = c.B().Wait().Numreplicas(1).Timeout(s.replicaWait.Milliseconds()).Build()
		res = c.DoMulti(ctx, c.B().Eval().Script(AcquireScript.Source()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(), wait)
	}
	vals, err := res[0].ToArray()
	if err != nil {
		return nil, nil, err
	}
	n, err := res[1].AsInt64()
	if err != nil {
		return nil, nil, err
	}
	replicated := n >= 1
	return vals, &replicated, nil
}

// refresh extends the lock held with token to ttl (0: the ttl it was
// acquired with, or def for a holder that left none). ok is false when token
// does not hold the lock.
func (s store) refresh(ctx context.Context, name, token string, ttl, def time.Duration) (g *grant, ok bool, err error) {
	c, err := s.client()
	if err != nil {
		return nil, false, err
	}
	vals, err := luaScripts.Refresh.Exec(ctx, c,
		[]string{lockKey(name), metaKey(name)},
		[]string{token, ms(ttl), ms(def)}).ToArray()
	if err != nil {
		return nil, false, redisstore.Wrap("lock refresh", err)
	}
	if intAt(vals, 0) != 1 {
		return nil, false, nil
	}
	d := time.Duration(intAt(vals, 1)) * time.Millisecond
	now := intAt(vals, 2)
	return &grant{TTL: d, ExpiresAt: time.UnixMilli(now).Add(d).UTC(), Owner: strAt(vals, 3), Fence: intAt(vals, 4)}, true, nil
}

// Release outcomes.
const (
	released = 1
	notHeld  = 0
	notOwner = -1
)

// release deletes the lock held with token and publishes the release.
func (s store) release(ctx context.Context, name, token string) (int64, error) {
	c, err := s.client()
	if err != nil {
		return 0, err
	}
	n, err := ReleaseScript.Exec(ctx, c,
		[]string{lockKey(name), metaKey(name)},
		[]string{token, ReleaseChannel, name}).AsInt64()
	if err != nil {
		return 0, redisstore.Wrap("lock release", err)
	}
	return n, nil
}

// inspect reads the lock's holder; nil when the lock is free.
func (s store) inspect(ctx context.Context, name string) (*holder, error) {
	c, err := s.client()
	if err != nil {
		return nil, err
	}
	vals, err := luaScripts.Inspect.Exec(ctx, c, []string{lockKey(name), metaKey(name)}, nil).ToArray()
	if err != nil {
		return nil, redisstore.Wrap("lock inspect", err)
	}
	if intAt(vals, 0) != 1 {
		return nil, nil
	}
	return &holder{TTL: pttl(intAt(vals, 1)), Owner: strAt(vals, 2), Fence: intAt(vals, 3)}, nil
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// pttl turns a PTTL reply into a duration, keeping -1 (no expiry).
func pttl(n int64) time.Duration {
	if n < 0 {
		return -1
	}
	return time.Duration(n) * time.Millisecond
}

// intAt is vals[i] as an integer, 0 when absent or nil (Lua false).
func intAt(vals []rueidis.RedisMessage, i int) int64 {
	if i >= len(vals) {
		return 0
	}
	n, err := vals[i].AsInt64()
	if err != nil {
		return 0
	}
	return n
}

// strAt is vals[i] as a string, "" when absent or nil (Lua false).
func strAt(vals []rueidis.RedisMessage, i int) string {
	if i >= len(vals) {
		return ""
	}
	s, err := vals[i].ToString()
	if err != nil {
		return ""
	}
	return s
}
